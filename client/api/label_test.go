package api

import (
	"errors"
	"net/http"
	"testing"
)

func TestCheckLabel(t *testing.T) {
	tests := []struct {
		label, want string
	}{
		{"", ""},
		{"web-1", ""},
		{" padded ", ""},
		{"café ☕", ""},
		{"\u001b[31m", "label contains the control character U+001B; it must be printable text"},
		{"a\tb", "label contains the control character U+0009; it must be printable text"},
		{"x\u009by", "label contains the control character U+009B; it must be printable text"},
		{"a\x7f", "label contains the control character U+007F; it must be printable text"},
		{" ", "label must not be only whitespace"},
		{"\u3000\u00a0", "label must not be only whitespace"},
	}
	for _, tt := range tests {
		err := CheckLabel(tt.label)
		if tt.want == "" {
			if err != nil {
				t.Errorf("CheckLabel(%q) = %v, want nil", tt.label, err)
			}
			continue
		}
		var ae *Error
		if !errors.As(err, &ae) || ae.Status != http.StatusUnprocessableEntity || ae.Code != CodeValidation ||
			ae.Message != tt.want || ae.Hint != LabelHint {
			t.Errorf("CheckLabel(%q) = %#v, want 422 validation_error %q", tt.label, err, tt.want)
		}
	}
}
