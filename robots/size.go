package robots

import "unsafe"

// Size returns the bytes f retains on the heap: the File, its arena and
// tables, and what its extras hold (AI-usage lines, the canonical and
// decoded twins of the evasion guard). It is an accounting of what Parse
// allocated and keeps, not an estimate from the body's length (a body of
// long comments retains little, one of many short rules a lot); caches
// bound themselves by it.
func (f *File) Size() int64 {
	if f == nil {
		return 0
	}
	n := int64(unsafe.Sizeof(*f)) + int64(len(f.arena)) + tablesSize(f)
	if ex := f.extra; ex != nil {
		n += int64(unsafe.Sizeof(*ex))
		if ai := ex.ai; ai != nil {
			n += int64(unsafe.Sizeof(*ai)) +
				int64(cap(ai.usage))*int64(unsafe.Sizeof(usageRule{})) + int64(cap(ai.signals))*int64(unsafe.Sizeof(Statement{}))
			for _, u := range ai.usage {
				n += int64(len(u.pattern)) + u.stmt.size()
			}
			for _, s := range ai.signals {
				n += s.size()
			}
		}
		if ex.visits != nil {
			n += int64(unsafe.Sizeof(*ex.visits)) + int64(cap(*ex.visits))*int64(unsafe.Sizeof(visitRule{}))
		}
		for _, twin := range []*File{ex.canon, ex.decoded} {
			if twin != nil { // its own arena and rules; the other tables are f's
				n += int64(unsafe.Sizeof(*twin)) + int64(len(twin.arena)) + int64(cap(twin.rules))*int64(unsafe.Sizeof(rule{}))
			}
		}
	}
	return n
}

// tablesSize is what f's tables occupy: one block after packTables.
func tablesSize(f *File) int64 {
	return int64(cap(f.agents))*int64(unsafe.Sizeof(agent{})) + int64(cap(f.members))*int64(unsafe.Sizeof(member{})) +
		int64(cap(f.runs))*int64(unsafe.Sizeof(run{})) + int64(cap(f.rules))*int64(unsafe.Sizeof(rule{}))
}
