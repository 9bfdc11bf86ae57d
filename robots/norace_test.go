//go:build !race

package robots

// raceSample: without the race detector the corpus comparison checks every
// file.
const raceSample = 1
