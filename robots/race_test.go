//go:build race

package robots

// raceSample: under the race detector the corpus comparison checks every
// raceSample-th file only (the oracle re-parses the file for every query).
const raceSample = 2
