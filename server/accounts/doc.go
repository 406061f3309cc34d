// Package accounts serves accounts and their credentials (reference §3.3):
// signup and login, which hand out short-lived access tokens; with one, an
// account manages its API keys, its settings and the SSH keys the bastion
// accepts; with an API key, it reads its account. Its routes are in
// routes.go; what it needs of the rest of the control plane is in Deps.
package accounts
