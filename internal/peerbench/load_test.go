package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

const wrkOut = `Running 2s test @ http://127.0.0.1:39051
  1 threads and 50 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     9.76ms   12.01ms  80.00ms   90.00%
  8408 requests in 2.00s, 9.62MB read
Requests/sec:   4204.00
Transfer/sec:      4.81MB
peerbench-wrk requests=8408 ok=8408 bad=0 duration_us=2000000 p50_us=9760 p99_us=56520 connect=0 read=0 write=0 status=0 timeout=0
`

func TestParseWrkReadsTheCheckLine(t *testing.T) {
	r, err := parseWrk(wrkOut)
	if err != nil {
		t.Fatal(err)
	}
	if r.ok != 8408 || r.bad != 0 || r.rate() != 4204 || r.p50 != 9760*time.Microsecond || r.p99 != 56520*time.Microsecond {
		t.Errorf("parseWrk = %+v (rate %v)", r, r.rate())
	}
}

func TestParseWrkCountsFailures(t *testing.T) {
	for _, tc := range []struct{ line, what string }{
		{"requests=100 ok=90 bad=10 duration_us=1000000 p50_us=1 p99_us=2 connect=0 read=0 write=0 status=10 timeout=0", "bad responses"},
		{"requests=100 ok=100 bad=0 duration_us=1000000 p50_us=1 p99_us=2 connect=0 read=3 write=0 status=0 timeout=0", "socket errors"},
		{"requests=100 ok=95 bad=0 duration_us=1000000 p50_us=1 p99_us=2 connect=0 read=0 write=0 status=0 timeout=0", "responses the check did not see"},
	} {
		r, err := parseWrk("peerbench-wrk " + tc.line + "\n")
		if err != nil {
			t.Fatal(err)
		}
		if r.bad == 0 || r.errs == "" {
			t.Errorf("%s: not counted as bad: %+v", tc.what, r)
		}
	}
}

func TestParseWrkRejectsMissingOrMalformedLine(t *testing.T) {
	for _, out := range []string{
		"Requests/sec: 4204.00\n",
		"peerbench-wrk requests=1 ok=1\n",
		"peerbench-wrk requests=x ok=1 bad=0 duration_us=1 p50_us=1 p99_us=1 connect=0 read=0 write=0 timeout=0\n",
	} {
		if _, err := parseWrk(out); err == nil {
			t.Errorf("parseWrk(%q): no error", out)
		}
	}
}

// TestCheckLuaPrintsWhatParseWrkReads: the embedded wrk script prints
// every field parseWrk requires.
func TestCheckLuaPrintsWhatParseWrkReads(t *testing.T) {
	for _, k := range []string{"requests", "ok", "bad", "duration_us", "p50_us", "p99_us", "connect", "read", "write", "status", "timeout"} {
		if !strings.Contains(checkLua, " "+k+"=%d") {
			t.Errorf("check.lua does not print %s=", k)
		}
	}
	if !strings.Contains(checkLua, "peerbench-wrk ") {
		t.Error("check.lua does not print the peerbench-wrk line")
	}
}

func TestFetchChecksStatusAndBodyLength(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/short":
			w.Write(make([]byte, bodyBytes-1))
		case "/refused":
			w.WriteHeader(http.StatusForbidden)
			w.Write(make([]byte, bodyBytes))
		default:
			w.Write(make([]byte, bodyBytes))
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	if err := fetch(ctx, srv.Client(), srv.URL+"/ok"); err != nil {
		t.Errorf("a 200 with %d bytes: %v", bodyBytes, err)
	}
	for _, path := range []string{"/short", "/refused"} {
		if err := fetch(ctx, srv.Client(), srv.URL+path); err == nil {
			t.Errorf("%s passed the check", path)
		}
	}
}

func TestCheckOrigin(t *testing.T) {
	plain, signing := &setup{name: "p"}, &setup{name: "s", signs: true}
	res := loadResult{ok: 100}
	for _, tc := range []struct {
		s              *setup
		before, after  originStats
		wantErr, about string
	}{
		{plain, originStats{10, 0}, originStats{110, 0}, "", "all forwarded"},
		{plain, originStats{10, 0}, originStats{60, 0}, "did not come from it", "half from a cache"},
		{signing, originStats{0, 0}, originStats{100, 100}, "", "all signed"},
		{signing, originStats{0, 0}, originStats{100, 99}, "reached the origin signed", "one unsigned"},
		{plain, originStats{0, 0}, originStats{100, 1}, "reached the origin signed", "a stray signature"},
	} {
		err := checkOrigin(tc.s, tc.before, tc.after, res)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: %v", tc.about, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: error %v, want one saying %q", tc.about, err, tc.wantErr)
		}
	}
}

func TestPercentileNearestRank(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	if p := percentile(ds, 0.5); p != 50*time.Millisecond {
		t.Errorf("p50 = %v", p)
	}
	if p := percentile(ds, 0.99); p != 99*time.Millisecond {
		t.Errorf("p99 = %v", p)
	}
	if p := percentile(nil, 0.99); p != 0 {
		t.Errorf("p99 of nothing = %v", p)
	}
}
