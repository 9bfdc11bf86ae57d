package origin

import "testing"

// Telling a name's label from a number allocates nothing: it runs on every
// request (regression: a strconv error was allocated for each label).
func TestIPv4NumberOfALabelDoesNotAllocate(t *testing.T) {
	for _, label := range []string{"example", "com", "0xzz", "09", "12a"} {
		if n := testing.AllocsPerRun(100, func() { ipv4Number(label) }); n != 0 {
			t.Errorf("ipv4Number(%q): %v allocations", label, n)
		}
		if _, ok := ipv4Number(label); ok {
			t.Errorf("ipv4Number(%q) is numeric", label)
		}
	}
	for _, num := range []string{"127", "0x7f", "0177", "0x", "99999999999999999999"} {
		if _, ok := ipv4Number(num); !ok {
			t.Errorf("ipv4Number(%q) is not numeric", num)
		}
	}
}
