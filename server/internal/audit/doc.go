// Package audit writes the audit log (Log): for each operation that
// succeeded on a sandbox (or an image build), an entry appended to that
// sandbox's hash chain through the store, its detail scrubbed of secrets.
// It fails closed: while the store cannot commit entries, audited work is
// refused (Open) and entries already owed wait in order until the store
// takes them (Retry). New entries are handed to live watchers through
// the Broker; entries other servers append reach them as notices.
package audit
