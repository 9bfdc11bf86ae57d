package robots

import "unsafe"

// packTables moves a parsed file's agents, members, runs and rules, in the
// order a match reads them, into one allocation. A match of a file that is
// not in the CPU's cache then misses on one run of adjacent cache lines
// instead of four scattered ones, which is most of a cold match's cost.
//
// The four element types hold only uint32 and uint16 fields (no pointers,
// 4-byte alignment, sizes multiples of 4; TestTableTypesPackIntoWords checks
// it), so views of a []uint32 are sound for the garbage collector and for
// alignment.
func packTables(f *File) {
	words := wordsOf(f.agents) + wordsOf(f.members) + wordsOf(f.runs) + wordsOf(f.rules)
	if words == 0 {
		return
	}
	block := make([]uint32, words)
	f.agents = carve(&block, f.agents)
	f.members = carve(&block, f.members)
	f.runs = carve(&block, f.runs)
	f.rules = carve(&block, f.rules)
}

// wordsOf is the number of 32-bit words s occupies.
func wordsOf[T agent | member | run | rule](s []T) int {
	var zero T
	return len(s) * int(unsafe.Sizeof(zero)) / 4
}

// carve copies s to the start of *block, returns the copy and advances
// *block past it.
func carve[T agent | member | run | rule](block *[]uint32, s []T) []T {
	if len(s) == 0 {
		return nil
	}
	n := wordsOf(s)
	dst := unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData((*block)[:n]))), len(s))
	copy(dst, s)
	*block = (*block)[n:]
	return dst
}
