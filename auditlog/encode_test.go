package auditlog

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/audit"
)

// filled is a record with every field set to a value that is not its
// zero, by reflection, so that a field added to audit.Record is set here
// too and appendRecord must write it as Marshal does.
func filled(t testing.TB, s string, f float64) *audit.Record {
	r := &audit.Record{}
	fill(t, reflect.ValueOf(r).Elem(), s, f)
	return r
}

func fill(t testing.TB, v reflect.Value, s string, f float64) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(len(s)) + 7)
	case reflect.Float64:
		v.SetFloat(f)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(t, v.Elem(), s, f)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			fill(t, v.Index(i), s, f)
		}
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Date(2026, 11, 27, 13, 4, 5, 123456789, time.UTC)))
			return
		}
		for i := range v.NumField() {
			fill(t, v.Field(i), s, f)
		}
	default:
		t.Fatalf("fill: a field of kind %s: teach appendRecord and this test about it", v.Kind())
	}
}

// sameAsMarshal fails unless appendRecord writes r as json.Marshal does.
func sameAsMarshal(t *testing.T, r *audit.Record) {
	t.Helper()
	want, wantErr := json.Marshal(r)
	got, err := appendRecord([]byte("prefix"), r)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("appendRecord error %v, Marshal's %v", err, wantErr)
	}
	if wantErr == nil && !bytes.Equal(got, append([]byte("prefix"), want...)) {
		t.Fatalf("appendRecord wrote\n%s\nMarshal writes\n%s", got[len("prefix"):], want)
	}
}

// TestAppendRecordIsMarshal: the audit log's lines are what encoding/json
// writes, whatever the record holds: every field set (and none), strings
// that need escaping, floats in both of Marshal's forms.
func TestAppendRecordIsMarshal(t *testing.T) {
	for _, s := range []string{
		"", "plain", `quote " and \ backslash`, "<script>&amp;</script>", "tab\t nl\n cr\r bs\b ff\f nul\x00 esc\x1b del\x7f",
		"é ü € 𝄞", "invalid \xff\xfe utf-8 \xc3", "line sep \u2028 para sep \u2029", "\xed\xa0\x80 surrogate",
	} {
		for _, f := range []float64{0, 1, 0.5, 1093.7, 1e-7, 1.5e-6, 9.99e20, 1e21, 123456789.123, -2.5, 5e-324} {
			sameAsMarshal(t, filled(t, s, f))
		}
	}
	sameAsMarshal(t, &audit.Record{})
	sameAsMarshal(t, &audit.Record{Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600))})
	sameAsMarshal(t, &audit.Record{WaitMS: math.NaN()})
	sameAsMarshal(t, &audit.Record{DurationMS: math.Inf(1)})
	sameAsMarshal(t, &audit.Record{Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)})
}

func FuzzAppendRecord(f *testing.F) {
	f.Add("https://example.com/a?b=c", "Mozilla/5.0", 1.25, int64(3), true)
	f.Add("\xff<\u2028>", "\x00", 1e-9, int64(-1), false)
	f.Fuzz(func(t *testing.T, s, ua string, ms float64, n int64, many bool) {
		r := &audit.Record{URL: s, UserAgent: ua, Note: s + ua, WaitMS: ms, DurationMS: -ms, Bytes: n,
			Time: time.Unix(n%1e10, n%1e9).UTC(), Line: int(n)}
		if many {
			r = filled(t, s, ms)
			r.UserAgent = ua
		}
		sameAsMarshal(t, r)
	})
}

// BenchmarkEncode compares the audit log's encoder with json.Marshal on a
// typical record (benchstat -col /impl).
func BenchmarkEncode(b *testing.B) {
	r := benchRecord(1)
	b.Run("impl=marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=append", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 1024)
		for b.Loop() {
			var err error
			if buf, err = appendRecord(buf[:0], r); err != nil {
				b.Fatal(err)
			}
		}
	})
}
