package cli

import "testing"

func TestBastionAddr(t *testing.T) {
	t.Parallel()
	tests := []struct {
		flag, env, conf, base string
		host, port            string
		wantErr               bool
	}{
		{base: "http://127.0.0.1:8090", host: "127.0.0.1", port: "2222"},
		{base: "https://boxkite.example.com", host: "boxkite.example.com", port: "2222"},
		{env: "b.example:22", base: "http://x", host: "b.example", port: "22"},
		{flag: "f.example", env: "b.example:22", host: "f.example", port: "2222"},
		{flag: "[::1]:2022", host: "::1", port: "2022"},
		{flag: "::1", host: "::1", port: "2222"},
		{flag: "h:0", wantErr: true},
		{flag: "h:x", wantErr: true},
		{flag: "user@h", wantErr: true},
		{flag: ":22", wantErr: true},
		{base: "not a url", wantErr: true},
		{conf: "127.0.0.1:2223", base: "http://127.0.0.1:8090", host: "127.0.0.1", port: "2223"},
		{env: "e.example:22", conf: "127.0.0.1:2223", host: "e.example", port: "22"},
	}
	for _, tt := range tests {
		host, port, err := bastionAddr(tt.flag, tt.env, tt.conf, tt.base)
		if (err != nil) != tt.wantErr || host != tt.host || port != tt.port {
			t.Errorf("bastionAddr(%q, %q, %q, %q) = %q, %q, %v; want %q, %q, error %v",
				tt.flag, tt.env, tt.conf, tt.base, host, port, err, tt.host, tt.port, tt.wantErr)
		}
	}
}
