//go:build !linux

package main

// echoOff does nothing where the terminal's settings are not reached
// here: term.ReadPassword still turns echo off, once the prompt shows.
func echoOff(int) (restore func(), err error) { return func() {}, nil }
