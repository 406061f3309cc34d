package storagesync

import (
	"context"
	"errors"
	"fmt"
)

// ErrNoBucket is wrapped by a Backend call that found its bucket (Azure:
// container) missing: deleted outright, not emptied. Real S3, Azure and
// GCS answer so; SeaweedFS makes the bucket again on the next put.
var ErrNoBucket = errors.New("the bucket does not exist")

// noBucketError is a call's error when the bucket is missing: it says so
// by name and wraps both ErrNoBucket and the store's answer.
type noBucketError struct {
	bucket string
	err    error
}

func (e *noBucketError) Error() string {
	return fmt.Sprintf("bucket %s does not exist: %v", e.bucket, e.err)
}

func (e *noBucketError) Unwrap() []error { return []error{ErrNoBucket, e.err} }

// bucketMaker is a Backend that can check its bucket and make it when it
// is missing and its Config said CreateBucket: what Open does at start.
type bucketMaker interface {
	// createsBucket reports whether Config.CreateBucket was set.
	createsBucket() bool
	// ensureBucket reports whether it made the bucket.
	ensureBucket(ctx context.Context) (bool, error)
}

// bucketGone handles a flush's error that says the bucket is missing the
// way a start of the server does. Every sandbox's index is checked against
// the bucket again at its next flush (verify.go): the index claims objects
// that went with the bucket, and a bucket made again is empty. Then, when
// the backend was opened to create its bucket (Config.CreateBucket), it is
// made now; without that, as at start, it is the operator's to make, and
// the flushes fail (GET …/sync says which bucket) until it is back. It
// reports whether the bucket was made, so the flush may be tried again.
func (s *Service) bucketGone(ctx context.Context, err error) bool {
	if !errors.Is(err, ErrNoBucket) {
		return false
	}
	s.mu.Lock()
	clear(s.verified)
	clear(s.names) // a bucket made again holds no marker
	s.mu.Unlock()
	m, ok := s.d.Backend.(bucketMaker)
	if !ok || !m.createsBucket() {
		return false
	}
	made, merr := m.ensureBucket(ctx)
	if merr != nil {
		s.d.Log.WarnContext(ctx, "make the missing bucket", "err", s.redact(merr.Error()))
		return false
	}
	if made {
		s.d.Log.WarnContext(ctx, "the bucket was missing and was made again; every sandbox's files are stored again")
	}
	return made
}
