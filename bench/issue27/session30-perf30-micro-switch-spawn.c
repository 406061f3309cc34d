#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sched.h>
#include <sys/wait.h>
#include <sys/resource.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
static double pcpu(int who){struct rusage r;getrusage(who,&r);return (r.ru_utime.tv_sec+r.ru_stime.tv_sec)*1e9+(r.ru_utime.tv_usec+r.ru_stime.tv_usec)*1e3;}
int main(){
  cpu_set_t s; CPU_ZERO(&s); CPU_SET(0,&s); sched_setaffinity(0,sizeof s,&s);
  int a[2],b[2]; pipe(a); pipe(b); int N=20000; char c='x';
  pid_t p=fork();
  if(p==0){ for(int i=0;i<N;i++){read(a[0],&c,1);write(b[1],&c,1);} _exit(0);}
  double c0=pcpu(RUSAGE_SELF);
  for(int i=0;i<N;i++){write(a[1],&c,1);read(b[0],&c,1);}
  waitpid(p,0,0);
  double tot=pcpu(RUSAGE_SELF)-c0+pcpu(RUSAGE_CHILDREN);
  printf("pipe round trip on one CPU (2 switches, 4 syscalls): %.1f us cpu\n",tot/N/1000);
  int F=100; c0=pcpu(RUSAGE_CHILDREN); double w0=now();
  for(int i=0;i<F;i++){pid_t q=fork(); if(q==0){execl("/bin/true","true",NULL);_exit(1);} waitpid(q,0,0);}
  printf("fork+exec /bin/true+exit: %.0f us child cpu, %.0f us wall each\n",(pcpu(RUSAGE_CHILDREN)-c0)/F/1000,(now()-w0)/F/1000);
}
