package api

import "time"

// Image statuses: queued → building → completed | failed.
const (
	ImageQueued    = "queued"
	ImageBuilding  = "building"
	ImageCompleted = "completed"
	ImageFailed    = "failed"
)

// Image sources.
const (
	ImageSourceImport = "import" // an OCI layout or docker save archive
	ImageSourceBuild  = "build"  // a declarative build (ImageSpec)
)

// ImageSpec is a declarative image build: a base plus pinned packages.
type ImageSpec struct {
	Base           string   `json:"base,omitempty"` // "boxkite-default" when empty
	AptPackages    []string `json:"apt_packages,omitempty"`
	PythonPackages []string `json:"python_packages,omitempty"`
	NPMPackages    []string `json:"npm_packages,omitempty"`
}

// CreateImageRequest is the body of POST /v1/images.
type CreateImageRequest struct {
	Label string `json:"label,omitempty"`
	ImageSpec
}

// Image is a sandbox root filesystem owned by one account. Sandboxes
// created with its ID as image_id boot from it once it is completed.
type Image struct {
	ID            string     `json:"id"`
	Label         string     `json:"label,omitempty"`
	Status        string     `json:"status"`
	Source        string     `json:"source"`
	Spec          *ImageSpec `json:"spec,omitempty"` // builds only
	FailureReason string     `json:"failure_reason,omitempty"`
	FailureCode   string     `json:"failure_code,omitempty"` // a failed build's CodeImageBuild*, an import's CodeImageImport*
	FailureHint   string     `json:"failure_hint,omitempty"` // what to do about it
	SizeBytes     int64      `json:"size_bytes,omitempty"`
	CreatedAt     time.Time  `json:"created_at"`
	CompletedAt   *time.Time `json:"completed_at,omitempty"`
}

// CodeImageInUse (409) answers a DELETE of an image a live or paused
// sandbox boots from, a snapshot needs for its restore, or that is still
// being built.
const CodeImageInUse = "image_in_use"
