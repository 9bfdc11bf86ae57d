package paycrawl

import "testing"

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Price
		ok   bool
	}{
		{"USD 0.01", Price{"USD", 10_000}, true},
		{" USD 1 ", Price{"USD", 1_000_000}, true},
		{"EUR 0.000001", Price{"EUR", 1}, true},
		{"USD 999999999.999999", Price{"USD", 999_999_999_999_999}, true},
		{"usd 0.01", Price{}, false},
		{"USD  0.01", Price{}, false},
		{"USD 0.0000001", Price{}, false},
		{"USD 1000000000", Price{}, false},
		{"USD -1", Price{}, false},
		{"USD 1.", Price{}, false},
		{"USD .5", Price{}, false},
		{"USD 1e3", Price{}, false},
		{"US 1", Price{}, false},
		{"USD", Price{}, false},
		{"USD 0.01 ", Price{"USD", 10_000}, true},
		{"USD 0.01;x", Price{}, false},
	} {
		got, err := Parse(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestStringRoundTrips(t *testing.T) {
	for in, want := range map[string]string{"USD 0.01": "USD 0.01", "USD 1": "USD 1.00", "EUR 0.0025": "EUR 0.0025", "USD 12.5": "USD 12.50"} {
		p, err := Parse(in)
		if err != nil || p.String() != want {
			t.Errorf("Parse(%q).String() = %q, %v; want %q", in, p.String(), err, want)
		}
	}
}

func TestWithin(t *testing.T) {
	max := Price{"USD", 50_000}
	for _, tc := range []struct {
		p    Price
		want bool
	}{
		{Price{"USD", 50_000}, true},
		{Price{"USD", 10_000}, true},
		{Price{"USD", 50_001}, false},
		{Price{"EUR", 1}, false},
	} {
		if got := tc.p.Within(max); got != tc.want {
			t.Errorf("%v.Within(%v) = %v", tc.p, max, got)
		}
	}
}

// FuzzParse: any input parses or fails without panic; what parses is
// printed back to a value that parses to the same price.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"USD 0.01", "EUR 1", "USD 999999999.999999", "X", "USD 1.", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := Parse(s)
		if err != nil {
			return
		}
		if p.Amount < 0 || p.Amount >= maxAmount {
			t.Fatalf("Parse(%q) amount %d", s, p.Amount)
		}
		q, err := Parse(p.String())
		if err != nil || q != p {
			t.Fatalf("Parse(%q) = %v; its String %q parses to %v, %v", s, p, p.String(), q, err)
		}
	})
}
