package robots

import (
	"reflect"
	"testing"
)

// TestTableTypesPackIntoWords: packTables views a []uint32 as each table's
// element type, which is sound only for pointer-free types of 4-byte
// alignment whose size is a multiple of 4.
func TestTableTypesPackIntoWords(t *testing.T) {
	for _, typ := range []reflect.Type{
		reflect.TypeFor[agent](), reflect.TypeFor[member](), reflect.TypeFor[run](), reflect.TypeFor[rule](),
	} {
		if typ.Size()%4 != 0 || typ.Align() > 4 || hasPointers(typ) {
			t.Errorf("%v: size %d, align %d, pointers %v", typ, typ.Size(), typ.Align(), hasPointers(typ))
		}
	}
}

func hasPointers(typ reflect.Type) bool {
	switch typ.Kind() {
	case reflect.Struct:
		for i := range typ.NumField() {
			if hasPointers(typ.Field(i).Type) {
				return true
			}
		}
		return false
	case reflect.Array:
		return hasPointers(typ.Elem())
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Bool:
		return false
	}
	return true
}

// TestPackedTablesAreAdjacent: a parsed file's tables share one allocation.
func TestPackedTablesAreAdjacent(t *testing.T) {
	f := Parse([]byte("User-agent: a\nDisallow: /x\n\nUser-agent: *\nAllow: /y\nDisallow: /z\n"))
	if len(f.agents) != 1 || len(f.members) != 2 || len(f.runs) != 2 || len(f.rules) != 3 {
		t.Fatalf("tables %d %d %d %d", len(f.agents), len(f.members), len(f.runs), len(f.rules))
	}
	end := func(p, n, size uintptr) uintptr { return p + n*size }
	a, m := reflect.ValueOf(f.agents).Pointer(), reflect.ValueOf(f.members).Pointer()
	r, u := reflect.ValueOf(f.runs).Pointer(), reflect.ValueOf(f.rules).Pointer()
	if end(a, 1, 20) != m || end(m, 2, 8) != r || end(r, 2, 20) != u {
		t.Errorf("tables not back to back: %x %x %x %x", a, m, r, u)
	}
	if f.Allowed("a", "/x") || !f.Allowed("b", "/y") || f.Allowed("b", "/z") {
		t.Error("wrong verdicts after packing")
	}
}
