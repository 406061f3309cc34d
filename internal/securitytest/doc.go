// Package securitytest is the adversarial test suite of design/SECURITY.md:
// each test attacks a real sandbox created through the real control plane
// and local driver (server/servertest) and checks that the attack fails,
// while a second sandbox stays responsive. It holds only tests; run them as
// root, as CI does:
//
//	go test ./internal/securitytest
//	go test ./internal/securitytest -run '^$' -bench CPUHog    # exec latency under a CPU hog
package securitytest
