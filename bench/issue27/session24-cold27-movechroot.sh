#!/bin/bash
# In a private mount namespace: a tmpfs root with the host's /usr bound in, switched to with MS_MOVE + chroot
# (session 18's alternative to pivot_root), then: can a process in it make a user namespace, and what is beneath?
set -e
nr=/tmp/cold27/nr; mkdir -p $nr; mount -t tmpfs tmpfs $nr
mkdir -p $nr/usr $nr/x; for d in bin lib lib64 sbin; do [ -L /$d ] && ln -s usr/$d $nr/$d; done
mount --rbind -o ro /usr $nr/usr
cd $nr; mount --move . /
exec chroot . /usr/bin/bash -c '
  echo "in the new root: $(ls / | tr "\n" " ")"
  unshare --user true && echo "unshare --user: allowed" || echo "unshare --user: refused"
  /usr/bin/python3 -c "import os; import ctypes; assert ctypes.CDLL(None, use_errno=True).unshare(0x10000000) == 0; os.chroot(\"/x\"); [os.chdir(\"..\") for _ in range(20)]; os.chroot(\".\"); print(\"after the escape:\", sorted(os.listdir(\"/\"))[:12])"
'
