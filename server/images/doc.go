// Package images keeps the sandbox images of the local driver: root
// filesystems imported from OCI or docker archives, one directory each
// under the server's state dir, with a JSON record beside it.
//
//	DIR/<id>/image.json   the record (api.Image plus its account)
//	DIR/<id>/rootfs/      the flattened root filesystem the jail binds read-only
//	DIR/<id>/archive.tar  the uploaded archive, removed once extracted
//
// Records live in files rather than the control store because the root
// filesystems they describe live on this machine only.
package images
