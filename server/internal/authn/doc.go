// Package authn holds the credentials' cryptography that has no state of
// its own: access tokens (HS256 JWTs, signed and verified with
// github.com/golang-jwt/jwt/v5; jwt.go)
// and password hashes (argon2id with a bound on concurrent hashing;
// password.go). Looking credentials up in the store and deciding what a
// credential may do stay with the control plane's guard.
package authn
