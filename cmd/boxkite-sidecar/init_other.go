//go:build !linux

package main

import "errors"

func runInit([]string) (int, error) { return 0, errors.New("jails need Linux") }

func runSpawner([]string) error { return errors.New("jails need Linux") }
