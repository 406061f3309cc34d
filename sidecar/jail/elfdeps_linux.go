package jail

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
)

// ELF constants the reader below needs (the ELF specification; debug/elf
// names them the same).
const (
	elfPTLoad    = 1
	elfPTDynamic = 2
	elfPTInterp  = 3
	elfDTNull    = 0
	elfDTNeeded  = 1
	elfDTStrtab  = 5
	elfDTStrsz   = 10
	elfMaxDyn    = 1 << 16 // dynamic entries read at most
	elfMaxString = 4096    // longest interpreter path or library name
)

var errNotELF64 = errors.New("not a little-endian 64-bit ELF file")

// ELFDeps returns the ELF interpreter of the executable at path and the
// libraries it needs (DT_NEEDED, in order); interp is "" for a static
// binary. It reads what the kernel and the dynamic loader read, the
// program headers and the dynamic segment, of a little-endian 64-bit file
// (every architecture the sidecar is built for).
//
// Why not debug/elf: linking that package adds its init and those of
// debug/dwarf and internal/zstd to every jail's start, ~8 page faults of
// each sandbox's create for code that runs only when a dynamically linked
// sidecar boots an image (issue 27).
func ELFDeps(path string) (interp string, libs []string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return "", nil, err
	}
	defer f.Close()
	return elfDeps(f)
}

// elfDeps is ELFDeps of the open file f.
func elfDeps(f *os.File) (interp string, libs []string, err error) {
	r := elfReader{f}
	var h [64]byte
	if err := r.read(h[:], 0); err != nil {
		return "", nil, err
	}
	if !bytes.Equal(h[:4], []byte("\x7fELF")) || h[4] != 2 || h[5] != 1 {
		return "", nil, errNotELF64
	}
	le := binary.LittleEndian
	phoff, phentsize, phnum := le.Uint64(h[0x20:]), uint64(le.Uint16(h[0x36:])), uint64(le.Uint16(h[0x38:]))
	if phentsize < 56 {
		return "", nil, fmt.Errorf("program header size %d", phentsize)
	}
	var loads [][3]uint64 // vaddr, offset, filesz
	var dyn [2]uint64     // offset, filesz
	for i := range phnum {
		var ph [56]byte
		if err := r.read(ph[:], phoff+i*phentsize); err != nil {
			return "", nil, err
		}
		off, vaddr, filesz := le.Uint64(ph[8:]), le.Uint64(ph[16:]), le.Uint64(ph[32:])
		switch le.Uint32(ph[0:]) {
		case elfPTInterp:
			if filesz > elfMaxString {
				return "", nil, fmt.Errorf("interpreter of %d bytes", filesz)
			}
			b := make([]byte, filesz)
			if err := r.read(b, off); err != nil {
				return "", nil, err
			}
			interp = string(bytes.TrimRight(b, "\x00"))
		case elfPTLoad:
			loads = append(loads, [3]uint64{vaddr, off, filesz})
		case elfPTDynamic:
			dyn = [2]uint64{off, filesz}
		}
	}
	if interp == "" {
		return "", nil, nil
	}
	libs, err = r.needed(dyn[0], dyn[1], loads)
	return interp, libs, err
}

// elfReader reads an ELF file's parts, an error for a short file.
type elfReader struct{ f *os.File }

func (r elfReader) read(b []byte, off uint64) error {
	if off > 1<<62 {
		return fmt.Errorf("offset %d out of range", off)
	}
	if _, err := r.f.ReadAt(b, int64(off)); err != nil {
		return fmt.Errorf("read ELF file: %w", err)
	}
	return nil
}

// needed returns the DT_NEEDED names of the dynamic segment at off (size
// bytes); loads map the string table's address to its file offset.
func (r elfReader) needed(off, size uint64, loads [][3]uint64) ([]string, error) {
	le := binary.LittleEndian
	var names []uint64
	var strtab, strsz uint64
	for i := uint64(0); i+16 <= size && i < elfMaxDyn*16; i += 16 {
		var d [16]byte
		if err := r.read(d[:], off+i); err != nil {
			return nil, err
		}
		tag, val := le.Uint64(d[0:]), le.Uint64(d[8:])
		if tag == elfDTNull {
			break
		}
		switch tag {
		case elfDTNeeded:
			names = append(names, val)
		case elfDTStrtab:
			strtab = val
		case elfDTStrsz:
			strsz = val
		}
	}
	if len(names) == 0 {
		return nil, nil
	}
	base, ok := uint64(0), false
	for _, l := range loads {
		if strtab >= l[0] && strtab-l[0] < l[2] {
			base, ok = l[1]+strtab-l[0], true
			break
		}
	}
	if !ok {
		return nil, errors.New("dynamic string table outside the file")
	}
	libs := make([]string, 0, len(names))
	for _, n := range names {
		if n >= strsz {
			return nil, fmt.Errorf("library name at %d past the string table (%d bytes)", n, strsz)
		}
		b := make([]byte, min(elfMaxString, strsz-n))
		m, err := r.f.ReadAt(b, int64(base+n))
		if m == 0 && err != nil {
			return nil, fmt.Errorf("read ELF file: %w", err)
		}
		end := bytes.IndexByte(b[:m], 0)
		if end < 0 {
			return nil, fmt.Errorf("library name at %d not terminated", n)
		}
		libs = append(libs, string(b[:end]))
	}
	return libs, nil
}
