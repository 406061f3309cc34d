#!/usr/bin/env python3
"""jailcpu.py SCRIPT HELPERPID: where the jails' CPU goes in a `perf record -g`
(cpu-clock) of BenchmarkCreateDeleteServer (`perf script -F
comm,pid,tid,ip,sym`): the samples of the sidecar processes but the
spawner's helper, by what the stack was doing. On this PVM guest the
cpu-clock sample of a stretch with interrupts off lands where they are
turned on again (pvm_irq_enable): it is attributed by its callers."""
import sys, re, collections
exec(open(sys.argv[0].replace('jailcpu', 'waits')).read().split("path, n =")[0])

CATS = [  # first match wins, looked up anywhere in the stack
    ('exit (mm and namespaces torn down)', ('do_exit', 'do_group_exit', 'exit_mmap')),
    ('execve', ('bprm_execve', 'do_execveat_common', 'load_elf_binary')),
    ('page fault', ('exc_page_fault', 'asm_exc_page_fault')),
    ('clone / thread start', ('copy_process', 'kernel_clone', '__do_sys_clone', 'ret_from_fork')),
    ('context switch', ('finish_task_switch', '__schedule')),
    ('TLB shootdown', ('flush_tlb_mm_range', 'smp_call_function_many_cond')),
    ('mount and namespace calls', ('path_mount', 'do_move_mount', 'open_tree', '__x64_sys_open_tree', 'move_mount',
                                   'mount_setattr', 'pivot_root', 'setns', 'unshare', 'fsconfig', 'fsmount', 'fsopen')),
    ('other system calls', ('entry_SYSCALL_64', 'do_syscall_64')),
]

# User frames that are a system call's instruction: with interrupts off
# around the call, its sample lands at the return.
STUBS = ('runtime.osyield', 'runtime.usleep', 'runtime.futex', 'runtime.rt_sigaction', 'runtime.rtsigprocmask',
         'runtime.mmap', 'runtime.madvise', 'runtime.munmap', 'runtime.clone', 'runtime.sigaltstack',
         'runtime.write1', 'runtime.read', 'runtime.open', 'runtime.closefd', 'runtime.exitThread',
         'runtime.sched_getaffinity', 'runtime.getpid', 'runtime.tgkill', 'runtime.settls', 'runtime.nanotime1',
         'internal/runtime/syscall/linux.Syscall6', 'syscall.RawSyscall6', 'syscall.rawSyscallNoError',
         'syscall.runtime_doAllThreadsSyscall', 'syscall.rawVforkSyscall', 'runtime/internal/syscall.Syscall6')
# Go runtime frames that first touch fresh memory (heap, stacks, their
# metadata): a page fault's sample can land at the faulting instruction.
TOUCH = ('runtime.memclrNoHeapPointers', 'runtime.(*pageAlloc)', 'runtime.stackpoolalloc', 'runtime.(*mheap)',
         'runtime.(*spanInlineMarkBits)', 'runtime.(*scavengeIndex)', 'runtime.malg', 'runtime.(*mspan)',
         'runtime.(*mcentral)', 'runtime.memmove', 'runtime.persistentalloc', 'runtime.(*fixalloc)')

path, helper = sys.argv[1], int(sys.argv[2])
cat = collections.Counter(); user = collections.Counter(); pids = set(); total = 0
for comm, pid, frames in samples(path):
    if comm not in ('dfa300c0b9d08a7', 'boxkite-sidecar') or pid == helper:
        continue
    pids.add(pid); total += 1
    joined = ' '.join(frames)
    for name, keys in CATS:
        if any(k in joined for k in keys):
            cat[name] += 1
            break
    else:
        top = frames[0] if frames else '?'
        if top.startswith(STUBS):
            cat['system calls (user side, at the return)'] += 1
        elif top.startswith(TOUCH):
            cat['user: Go runtime first touches of memory'] += 1
        elif top.startswith('runtime.') or top.startswith('internal/runtime') or top.endswith('.abi0'):
            cat['user: Go runtime'] += 1
        else:
            cat['user: other (package inits, sidecar)'] += 1
        user[top] += 1
print('%d samples of %d jail processes (%.1f per jail)' % (total, len(pids), total / max(1, len(pids))))
for name, v in cat.most_common():
    print('  %-40s %5.1f %%' % (name, 100.0 * v / total))
print('top user frames:', user.most_common(12))
