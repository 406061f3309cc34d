package kube

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CreateVolume makes a boxkite volume as a PersistentVolumeClaim of
// sizeBytes (model.VolumeDriver); sandboxes mount it by claim name.
func (d *Driver) CreateVolume(ctx context.Context, id string, sizeBytes int64) error {
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name: volumeClaimName(id), Namespace: d.cfg.Namespace,
			Labels: map[string]string{LabelManagedBy: ManagedBy},
		},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: *resource.NewQuantity(sizeBytes, resource.BinarySI),
			}},
		},
	}
	if d.cfg.StorageClass != "" {
		pvc.Spec.StorageClassName = ptr(d.cfg.StorageClass)
	}
	if _, err := d.client.CoreV1().PersistentVolumeClaims(d.cfg.Namespace).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create volume %s: %w", id, quotaRefusal(err))
	}
	return nil
}

// DeleteVolume deletes the volume's claim; a gone one is not an error.
func (d *Driver) DeleteVolume(ctx context.Context, id string) error {
	err := d.client.CoreV1().PersistentVolumeClaims(d.cfg.Namespace).Delete(ctx, volumeClaimName(id), metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete volume %s: %w", id, err)
	}
	return nil
}
