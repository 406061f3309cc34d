#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/resource.h>
#include <sys/wait.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
static double cpu(){struct timespec t;clock_gettime(CLOCK_THREAD_CPUTIME_ID,&t);return t.tv_sec*1e9+t.tv_nsec;}
int main(int argc,char**argv){
  int n=200000; double c0=cpu();
  for(int i=0;i<n;i++) syscall(SYS_getppid);
  printf("syscall getppid: %.0f ns cpu/call\n",(cpu()-c0)/n);
  size_t sz=64<<20;
  for(int r=0;r<4;r++){
    char*p=mmap(0,sz,PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS,-1,0);
    madvise(p,sz,MADV_NOHUGEPAGE);
    c0=cpu(); for(size_t o=0;o<sz;o+=4096)p[o]=1;
    printf("round %d: anon fault+zero 4K: %.0f ns cpu/page\n",r,(cpu()-c0)/(sz/4096));
    c0=cpu(); for(size_t o=0;o<sz;o+=4096)p[o]=2;
    printf("round %d: touch again: %.1f ns cpu/page\n",r,(cpu()-c0)/(sz/4096));
    munmap(p,sz);
  }
  // fork+exit+wait cost
  c0=now(); int F=200;
  for(int i=0;i<F;i++){pid_t q=fork(); if(q==0)_exit(0); waitpid(q,0,0);}
  printf("fork+exit+wait: %.0f us wall/each\n",(now()-c0)/F/1000);
  struct rusage ru; getrusage(RUSAGE_CHILDREN,&ru);
  printf("children cpu: %.0f us each\n",(ru.ru_utime.tv_sec*1e6+ru.ru_utime.tv_usec+ru.ru_stime.tv_sec*1e6+ru.ru_stime.tv_usec)/F);
  return 0;
}
