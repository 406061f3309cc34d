package kube

import (
	"cmp"
	"fmt"
	"maps"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Labels and annotations the driver sets. The managed-by label scopes
// every list; pod ties a Secret and NetworkPolicy to their pod; sandbox is
// set on everything of a bound sandbox.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedBy      = "boxkite"
	LabelPod       = "boxkite.dev/pod"
	LabelSandbox   = "boxkite.dev/sandbox"
	LabelState     = "boxkite.dev/state" // StateWarm or StateBound
	LabelSize      = "boxkite.dev/size"
	StateWarm      = "warm"
	StateBound     = "bound"

	containerName = "sidecar"
	tlsDir        = "/etc/boxkite/sidecar"
	sandboxUID    = 1001

	// Keys of a sidecar's Secret. tokenKey is the sandbox's token, the
	// driver's alone: the pod does not mount it. bootTokenKey is the one
	// the pod mounts, which only a claim accepts (see secret).
	tokenKey     = "token"
	bootTokenKey = "boot-token"
	// emptyKey is an empty file the pod mounts over the files of /proc it
	// must not show (procMasked).
	emptyKey = "empty"
)

// procMasked are the files of /proc a sandbox pod gets an empty file
// over, on top of the runtime's default masks (which leave them):
// /proc/diskstats lists the node's block devices with their I/O counters,
// every other pod's disk writes as they happen (docs/security.md, finding
// 32). It is the only one of the local jail's extra masks a pod can have:
// runc refuses a mount anywhere else inside /proc (its lxcfs allow-list:
// cpuinfo, diskstats, meminfo, stat, swaps, uptime, loadavg, slabinfo,
// net/dev and two sysctls), so /proc/partitions and /proc/pressure stay,
// and the pod would not start.
var procMasked = []string{"/proc/diskstats"}

// Size is a preset's resources for the sidecar container, which runs every
// command of the sandbox, so its limits are the sandbox's budget.
type Size struct {
	Requests, Limits corev1.ResourceList
}

// DefaultSizes are the size presets, the same budgets as the local driver's.
func DefaultSizes() map[string]Size {
	preset := func(reqCPU, reqMem, cpu, mem string) Size {
		return Size{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(reqCPU), corev1.ResourceMemory: resource.MustParse(reqMem)},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)},
		}
	}
	return map[string]Size{
		api.SizeSmall:  preset("100m", "256Mi", "1", "1Gi"),
		api.SizeMedium: preset("250m", "512Mi", "2", "2Gi"),
		api.SizeLarge:  preset("500m", "1Gi", "4", "4Gi"),
	}
}

// podPlan is everything that differs between the pods the driver makes.
type podPlan struct {
	name      string
	sandbox   string // "" for a warm pod
	size      string
	storageGB float64
	expiresAt time.Time // the sandbox's expires_at; zero for a warm pod
	volumes   []model.VolumeMount
	egress    string // the egress proxy's host:port; "" for none
}

func (d *Driver) labels(p podPlan) map[string]string {
	l := map[string]string{LabelManagedBy: ManagedBy, LabelPod: p.name, LabelSize: p.size, LabelState: StateBound}
	if p.sandbox == "" {
		l[LabelState] = StateWarm
	} else {
		l[LabelSandbox] = p.sandbox
	}
	return l
}

// secret holds the sidecar's tokens and TLS pair. The pod mounts the boot
// token and the pair, not the sandbox's token: agent commands run as the
// sidecar's own uid (a restricted pod can neither switch uids nor keep a
// file from a process of the same uid), so whatever the pod mounts they
// can read. The sidecar serves only POST /claim with the boot token, and
// the driver claims it with the sandbox's token before any command runs;
// from then on that token lives in the sidecar's memory (non-dumpable:
// closed to the agent's ptrace and /proc) and in this Secret, which the
// agent cannot reach. token is "" for a warm pod until its bind, which
// writes the sandbox's there: until then that key holds the boot token,
// where an older server (a rolling upgrade) looks for a warm pod's pool
// token to claim it with.
func (d *Driver) secret(p podPlan, token, boot string, c *certPair) *corev1.Secret {
	data := map[string][]byte{
		bootTokenKey: []byte(boot), tokenKey: []byte(cmp.Or(token, boot)), "tls.crt": c.certPEM, "tls.key": c.keyPEM,
		emptyKey: {},
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: secretName(p.name), Namespace: d.cfg.Namespace, Labels: d.labels(p)},
		Type:       corev1.SecretTypeOpaque,
		Data:       data,
	}
}

func secretName(pod string) string { return pod + "-sidecar" }

// pullSecrets refers a pod to the Secrets names; nil for none.
func pullSecrets(names []string) []corev1.LocalObjectReference {
	var refs []corev1.LocalObjectReference
	for _, n := range names {
		refs = append(refs, corev1.LocalObjectReference{Name: n})
	}
	return refs
}

// networkPolicy denies the pod all egress (a sandbox has no network unless
// granted) and admits only the control plane, on the sidecar port. A pod
// granted egress may reach the control plane on its proxy's port only:
// the proxy enforces the grants.
func (d *Driver) networkPolicy(p podPlan) (*networkingv1.NetworkPolicy, error) {
	port := intstr.FromInt32(d.cfg.SidecarPort)
	tcp := corev1.ProtocolTCP
	var egress []networkingv1.NetworkPolicyEgressRule // none: deny all
	if p.egress != "" {
		_, ps, err := net.SplitHostPort(p.egress)
		if err != nil {
			return nil, fmt.Errorf("egress address: %w", err)
		}
		n, err := strconv.ParseInt(ps, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("egress port: %w", err)
		}
		proxy := intstr.FromInt32(int32(n))
		egress = []networkingv1.NetworkPolicyEgressRule{{
			To:    []networkingv1.NetworkPolicyPeer{d.controlPlanePeer()},
			Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &proxy}},
		}}
	}
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: d.cfg.Namespace, Labels: d.labels(p)},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{LabelPod: p.name}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From:  []networkingv1.NetworkPolicyPeer{d.controlPlanePeer()},
				Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &port}},
			}},
			Egress: egress,
		},
	}, nil
}

// controlPlanePeer selects the control plane's pods: by their labels, in
// their own namespace when it is known.
func (d *Driver) controlPlanePeer() networkingv1.NetworkPolicyPeer {
	ns := &metav1.LabelSelector{}
	if d.cfg.ControlPlaneNamespace != "" {
		ns.MatchLabels = map[string]string{"kubernetes.io/metadata.name": d.cfg.ControlPlaneNamespace}
	}
	return networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: d.cfg.ControlPlaneLabels}, NamespaceSelector: ns}
}

// pod is one sandbox's pod: a single restricted container running
// boxkite-sidecar, writable only in its emptyDirs. It has no
// activeDeadlineSeconds: the control plane's reaper ends a sandbox at its
// expires_at (which an extend may move later than any deadline set at the
// start, and Kubernetes never lets a running pod's deadline grow), and
// the pool's own PoolMaxAge retires warm pods (expiry.go).
func (d *Driver) pod(p podPlan) (*corev1.Pod, error) {
	size, ok := d.cfg.Sizes[p.size]
	if !ok {
		return nil, fmt.Errorf("unknown size %q", p.size)
	}
	args := []string{
		"serve", "--listen", "tcp:0.0.0.0:" + strconv.Itoa(int(d.cfg.SidecarPort)),
		"--tls-cert", tlsDir + "/tls.crt", "--tls-key", tlsDir + "/tls.key",
		"--workspace", "/workspace",
		"--claimable", // every pod: its mounted token only claims (secret)
	}
	annotations := map[string]string{"cluster-autoscaler.kubernetes.io/safe-to-evict": strconv.FormatBool(p.sandbox == "")}
	if p.egress != "" {
		args = append(args, "--egress-proxy", p.egress)
		annotations[AnnotationEgress] = p.egress
	}
	if !p.expiresAt.IsZero() {
		annotations[AnnotationExpiresAt] = formatExpiry(p.expiresAt)
	}
	no, yes := false, true
	uid := int64(sandboxUID)
	volumes, mounts := d.podVolumes(p)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: p.name, Namespace: d.cfg.Namespace, Labels: d.labels(p),
			Annotations: annotations,
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  &no,
			EnableServiceLinks:            &no,
			TerminationGracePeriodSeconds: ptr(int64(10)),
			DNSPolicy:                     corev1.DNSDefault,
			HostUsers:                     ptr(d.cfg.HostUsers), // false: a user namespace of the pod's own
			ImagePullSecrets:              pullSecrets(d.cfg.ImagePullSecrets),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot: &yes, RunAsUser: &uid, RunAsGroup: &uid, FSGroup: &uid,
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name: containerName, Image: d.cfg.Image, ImagePullPolicy: d.cfg.ImagePullPolicy,
				Command: []string{"boxkite-sidecar"},
				Args:    args,
				Env: []corev1.EnvVar{
					{Name: "BOXKITE_SIDECAR_TOKEN_FILE", Value: tlsDir + "/" + bootTokenKey},
					{Name: "HOME", Value: "/workspace"},
					{Name: "TMPDIR", Value: "/tmp"},
				},
				Ports:        []corev1.ContainerPort{{Name: "sidecar", ContainerPort: d.cfg.SidecarPort, Protocol: corev1.ProtocolTCP}},
				Resources:    corev1.ResourceRequirements{Requests: maps.Clone(size.Requests), Limits: maps.Clone(size.Limits)},
				VolumeMounts: mounts,
				ReadinessProbe: &corev1.Probe{
					ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
						Path: "/health", Port: intstr.FromInt32(d.cfg.SidecarPort), Scheme: corev1.URISchemeHTTPS,
					}},
					PeriodSeconds: 2,
				},
				SecurityContext: &corev1.SecurityContext{
					RunAsNonRoot: &yes, RunAsUser: &uid, RunAsGroup: &uid,
					ReadOnlyRootFilesystem:   &yes,
					AllowPrivilegeEscalation: &no,
					Privileged:               &no,
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
					SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
				},
			}},
			Volumes: volumes,
		},
	}
	if d.cfg.RuntimeClassName != "" {
		pod.Spec.RuntimeClassName = ptr(d.cfg.RuntimeClassName)
	}
	return pod, nil
}

// podVolumes are a sandbox pod's volumes and their mounts: the workspace
// and /tmp emptyDirs, capped in size, the sidecar's secret, and a claim per
// boxkite volume.
func (d *Driver) podVolumes(p podPlan) ([]corev1.Volume, []corev1.VolumeMount) {
	storage := p.storageGB
	if storage <= 0 {
		storage = d.cfg.StorageGB
	}
	workspaceLimit := *resource.NewQuantity(int64(storage*(1<<30)), resource.BinarySI)
	tmpLimit := resource.MustParse(d.cfg.TmpSize)
	mounts := []corev1.VolumeMount{
		{Name: "workspace", MountPath: "/workspace"},
		// E2B's home, the workspace again, as the local driver's jail
		// links it (jail.HomeDir): what E2B's SDKs write there is found
		// by commands.
		{Name: "workspace", MountPath: "/home/user"},
		{Name: "tmp", MountPath: "/tmp"},
		{Name: "sidecar", MountPath: tlsDir, ReadOnly: true},
	}
	volumes := []corev1.Volume{
		{Name: "workspace", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &workspaceLimit}}},
		{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &tmpLimit}}},
		{Name: "sidecar", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: secretName(p.name), DefaultMode: ptr(int32(0o400)),
			// Never the sandbox's token (secret).
			Items: []corev1.KeyToPath{{Key: bootTokenKey, Path: bootTokenKey}, {Key: "tls.crt", Path: "tls.crt"}, {Key: "tls.key", Path: "tls.key"}},
		}}},
	}
	if d.cfg.RuntimeClassName == "" {
		volumes, mounts = maskProc(volumes, mounts, secretName(p.name))
	}
	for i, v := range p.volumes {
		name := "vol-" + strconv.Itoa(i)
		volumes = append(volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: volumeClaimName(v.ID)},
		}})
		mounts = append(mounts, corev1.VolumeMount{Name: name, MountPath: v.Path})
		if rest, ok := strings.CutPrefix(v.Path, "/workspace/"); ok {
			mounts = append(mounts, corev1.VolumeMount{Name: name, MountPath: "/home/user/" + rest})
		}
	}
	return volumes, mounts
}

// maskProc adds the mounts of an empty file (the Secret's emptyKey) over
// procMasked. Only on the cluster's default runtime, which shares the
// node's kernel: a RuntimeClass is there for a sandboxed one with a
// kernel of its own (gVisor's /proc has no diskstats, where a mount could
// not be made; a Kata VM's lists the VM's disks).
func maskProc(volumes []corev1.Volume, mounts []corev1.VolumeMount, secret string) ([]corev1.Volume, []corev1.VolumeMount) {
	volumes = append(volumes, corev1.Volume{Name: "masks", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: secret, DefaultMode: ptr(int32(0o444)),
		Items: []corev1.KeyToPath{{Key: emptyKey, Path: emptyKey}},
	}}})
	for _, path := range procMasked {
		mounts = append(mounts, corev1.VolumeMount{Name: "masks", MountPath: path, SubPath: emptyKey, ReadOnly: true})
	}
	return volumes, mounts
}

// volumeClaimName is the PersistentVolumeClaim holding a boxkite volume.
func volumeClaimName(id string) string { return "boxkite-vol-" + id }

func ptr[T any](v T) *T { return &v }
