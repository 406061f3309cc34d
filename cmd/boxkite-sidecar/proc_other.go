//go:build !linux

package main

func noDump() error { return nil }

func nameProcess() {}
