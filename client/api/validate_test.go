package api

import (
	"errors"
	"strings"
	"testing"
)

func TestValidAPIKey(t *testing.T) {
	rest := strings.Repeat("aZ0-_", 9)[:43]
	for _, tc := range []struct {
		key  string
		want bool
	}{
		{APIKeyPrefix + rest, true},
		{APIKeyPrefix + rest[:42], false},
		{APIKeyPrefix + rest + "a", false},
		{"bxk_test_" + rest, false},
		{rest, false},
		{APIKeyPrefix + rest[:42] + "=", false},
		{APIKeyPrefix + rest[:42] + "é", false},
		{" " + APIKeyPrefix + rest, false},
		{"", false},
	} {
		if got := ValidAPIKey(tc.key); got != tc.want {
			t.Errorf("ValidAPIKey(%q) = %v, want %v", tc.key, got, tc.want)
		}
	}
}

func TestCheckSecretName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"GITHUB_TOKEN", true},
		{"a.b-c_9", true},
		{"...", true},
		{strings.Repeat("x", MaxSecretNameLen), true},
		{strings.Repeat("x", MaxSecretNameLen+1), false},
		{"", false},
		{".", false},
		{"..", false},
		{"bad name", false},
		{"a/b", false},
		{"naïve", false},
		{"{{secret:X}}", false},
	} {
		err := CheckSecretName(tc.name)
		if (err == nil) != tc.ok {
			t.Errorf("CheckSecretName(%q) = %v, want ok %v", tc.name, err, tc.ok)
			continue
		}
		if err == nil {
			continue
		}
		e, isAPI := errors.AsType[*Error](err)
		if !isAPI || e.Status != 422 || e.Code != CodeValidation || e.Hint == "" {
			t.Errorf("CheckSecretName(%q) = %#v, want a 422 validation_error with a hint", tc.name, err)
		}
	}
}
