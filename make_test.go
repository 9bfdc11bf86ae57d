package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestMakeFuzzRunsEveryFuzzTarget keeps `make fuzz` whole: every fuzz
// target of the module is run by it, in its own package's directory.
func TestMakeFuzzRunsEveryFuzzTarget(t *testing.T) {
	makefile, err := os.ReadFile("Makefile")
	if err != nil {
		t.Fatal(err)
	}
	fuzzFunc := regexp.MustCompile(`(?m)^func (Fuzz\w+)\(`)
	found := 0
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range fuzzFunc.FindAllStringSubmatch(string(src), -1) {
			found++
			want := "-fuzz '^" + m[1] + "$$' -fuzztime $(FUZZTIME) ./" + filepath.ToSlash(filepath.Dir(path)) + "/\n"
			if !strings.Contains(string(makefile), want) {
				t.Errorf("%s: %s is not run by make fuzz (want a line ending %q)", path, m[1], want)
			}
		}
		return nil
	})
	if err != nil || found == 0 {
		t.Fatalf("walking the module: %v, %d fuzz targets found", err, found)
	}
}
