// Package imagesapi serves sandbox images over the API (routes.go):
// building one from a declarative spec (its egress and outcome audited),
// importing an OCI or docker archive, their logs, listing and deleting
// them; and for sandbox creates, resolving an image_id to the root
// filesystem the driver boots (RootFS). server/images keeps the images.
package imagesapi
