package deploy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/pelletier/go-toml/v2"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/boxkite/boxkite/server/kube"
)

// rendering is the chart rendered for one values file ("" = defaults).
type rendering struct {
	name    string // golden file stem
	values  string // path, or "" for the defaults
	sandbox string // the sandbox namespace it sets
	data    []byte
	objs    []object
}

// renderings renders the chart once per values file in testdata/values,
// plus the defaults, and shares the result: every test below reads them.
var renderings = sync.OnceValues(func() ([]*rendering, error) {
	files, err := filepath.Glob("testdata/values/*.yaml")
	if err != nil {
		return nil, err
	}
	out := []*rendering{{name: "default"}}
	for _, f := range files {
		out = append(out, &rendering{name: strings.TrimSuffix(filepath.Base(f), ".yaml"), values: f})
	}
	return out, nil
})

func allRenderings(t *testing.T) []*rendering {
	t.Helper()
	rs, err := renderings()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.data != nil {
			continue
		}
		var args []string
		if r.values != "" {
			args = []string{"-f", r.values}
		}
		data, err := render(t, args...)
		if err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
		objs, err := parse(data)
		if err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
		r.data, r.objs = data, objs
		// The sandbox namespace is where the server's Role is.
		for _, role := range find(objs, "Role") {
			r.sandbox = role.namespace()
		}
	}
	return rs
}

// TestChartGolden compares each rendering with its golden file; -update
// rewrites them. The default rendering is also what docs/kubernetes.md
// shows to people without helm.
func TestChartGolden(t *testing.T) {
	for _, r := range allRenderings(t) {
		t.Run(r.name, func(t *testing.T) {
			golden := filepath.Join("testdata", "golden", r.name+".yaml")
			if *update {
				if err := os.WriteFile(golden, r.data, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("read golden (run go test ./deploy -update): %v", err)
			}
			if diff := cmp.Diff(string(want), string(r.data)); diff != "" {
				t.Errorf("helm template differs from %s (-want +got; go test ./deploy -update rewrites it):\n%s", golden, diff)
			}
		})
	}
}

// TestChartLint runs helm lint --strict over the defaults and each values file.
func TestChartLint(t *testing.T) {
	for _, r := range allRenderings(t) {
		t.Run(r.name, func(t *testing.T) {
			args := []string{"lint", "--strict", chartDir, "--namespace", releaseNS, "--kube-version", kubeVersion}
			if r.values != "" {
				args = append(args, "-f", r.values)
			}
			if out, err := helm(t, args...); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
		})
	}
}

// TestChartRejects checks that the schema and the chart's cross-value
// checks refuse bad values: helm template fails and says why.
func TestChartRejects(t *testing.T) {
	tests := []struct {
		name string
		set  []string
		want string // in the error
	}{
		{"unknown top-level value", []string{"bogus=1"}, "bogus"},
		{"typo in a nested value", []string{"sandboxes.runtimeClass=gvisor"}, "runtimeClass"},
		{"no replicas", []string{"server.replicas=0"}, "replicas"},
		{"privileged pod security", []string{"sandboxes.podSecurity=privileged"}, "podSecurity"},
		{"malformed bootstrap key", []string{"auth.bootstrapApiKey=letmein"}, "bootstrapApiKey"},
		{"short jwt secret", []string{"auth.jwtSecret=short"}, "jwtSecret"},
		{"short bastion key", []string{"auth.bastionKey=short"}, "bastionKey"},
		// helm's validator names the offending key but not always its path.
		{"chart-managed server setting", []string{"server.config.driver=local"}, "'driver'"},
		{"db in server config", []string{"server.config.db=sqlite:/tmp/x"}, "'db'"},
		{"nested server config", []string{"server.config.limits.x=1"}, "config"},
		{"tag as a digest", []string{"sandboxes.image.digest=latest"}, "digest"},
		{"privileged port", []string{"server.port=80"}, "port"},
		{"unknown database", []string{"database.driver=mysql"}, "driver"},
		{"bad namespace", []string{"sandboxes.namespace=Sandboxes"}, "namespace"},
		{"negative warm pool", []string{"sandboxes.warmPool=-1"}, "warmPool"},
		{"no unauthenticated connections", []string{"bastion.maxStartups=0"}, "maxStartups"},
		{"bad login timeout", []string{"bastion.loginTimeout=soon"}, "loginTimeout"},
		{"bad service type", []string{"server.service.type=ExternalName"}, "type"},
		{"bad dsn", []string{"database.postgres.dsn=mysql://x"}, "dsn"},
		{"bad quantity", []string{"server.resources.limits.memory=1e3Mi"}, "memory"},
		{"negative quantity", []string{"bastion.resources.requests.cpu=-1"}, "cpu"},
		{"bad quota", []string{"sandboxes.resourceQuota.pods=many"}, "pods"},
		// The cross-value checks in _helpers.tpl.
		{"postgres without a dsn", []string{"database.driver=postgres"}, "database.postgres.existingSecret"},
		{"sqlite with replicas", []string{"server.replicas=2"}, "database.driver=postgres"},
		{"sandboxes in the release namespace", []string{"sandboxes.namespace=" + releaseNS}, "must differ"},
		{"secret and values", []string{"auth.existingSecret=x", "auth.jwtSecret=0123456789abcdef0123456789abcdef"}, "either"},
		{"object storage without a bucket", []string{"objectStorage.kind=s3"}, "objectStorage.bucket"},
		{"unknown object storage", []string{"objectStorage.kind=ftp", "objectStorage.bucket=b"}, "kind"},
		{"storage kind in server config", []string{"server.config.storage-kind=s3"}, "'storage-kind'"},
		{"bad state claim", []string{"server.stateVolume.existingClaim=Boxkite_State"}, "existingClaim"},
		{"host users in server config", []string{"server.config.host-users=true"}, "'host-users'"},
		{"pull secrets in server config", []string{"server.config.image-pull-secrets=x"}, "'image-pull-secrets'"},
		{"volume class in server config", []string{"server.config.volume-storage-class=x"}, "'volume-storage-class'"},
		{"bad storage class", []string{"sandboxes.storageClass=Fast_SSD"}, "storageClass"},
		// Set by the chart as flags or environment, which win over the
		// config file: silently ignored, or with SQLite's BOXKITE_SERVER_DB
		// a server that never starts (--db and --db-file both).
		{"db file in server config", []string{"server.config.db-file=/x"}, "'db-file'"},
		{"secrets dir in server config", []string{"server.config.secrets-dir=/x"}, "'secrets-dir'"},
		{"egress host in server config", []string{"server.config.egress-host=10.0.0.1"}, "'egress-host'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var args []string
			for _, s := range tt.set {
				args = append(args, "--set", s)
			}
			out, err := render(t, args...)
			if err == nil {
				t.Fatalf("helm template --set %v succeeded:\n%s", tt.set, out)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error does not mention %q:\n%v", tt.want, err)
			}
		})
	}
}

// TestChartSecurity checks every rendering for what SECURITY.md and the
// kube driver's design promise, independent of the goldens' details.
func TestChartSecurity(t *testing.T) {
	for _, r := range allRenderings(t) {
		t.Run(r.name, func(t *testing.T) {
			checkWorkloads(t, r.objs)
			checkRBAC(t, r.objs, r.sandbox)
			checkSandboxNamespace(t, r, r.sandbox)
			checkNoSecretsInPlainText(t, r)
		})
	}
}

// checkWorkloads: every pod the chart runs is non-root with a read-only
// root, no capabilities, no escalation, RuntimeDefault seccomp and nothing
// of the host's; only the server mounts a service-account token.
func checkWorkloads(t *testing.T, objs []object) {
	t.Helper()
	deployments := find(objs, "Deployment")
	if len(deployments) == 0 {
		t.Fatal("no Deployment rendered")
	}
	for _, d := range deployments {
		spec := dict(d.get("spec", "template", "spec"))
		component := str(d.get("metadata", "labels", "app.kubernetes.io/component"))
		if spec.get("securityContext", "runAsNonRoot") != true {
			t.Errorf("%s: pod runAsNonRoot is not true", d.name())
		}
		if str(spec.get("securityContext", "seccompProfile", "type")) != "RuntimeDefault" {
			t.Errorf("%s: pod seccompProfile is not RuntimeDefault", d.name())
		}
		if uid, _ := spec.get("securityContext", "runAsUser").(int); uid == 0 {
			t.Errorf("%s: pod runAsUser is %v", d.name(), spec.get("securityContext", "runAsUser"))
		}
		for _, k := range []string{"hostNetwork", "hostPID", "hostIPC"} {
			if spec[k] == true {
				t.Errorf("%s: %s", d.name(), k)
			}
		}
		for _, v := range list(spec["volumes"]) {
			if dict(v)["hostPath"] != nil {
				t.Errorf("%s: hostPath volume %v", d.name(), dict(v)["name"])
			}
		}
		wantToken := component == "server"
		if got := spec["automountServiceAccountToken"]; got != wantToken {
			t.Errorf("%s: automountServiceAccountToken = %v, want %v", d.name(), got, wantToken)
		}
		if spec["enableServiceLinks"] != false {
			t.Errorf("%s: enableServiceLinks is not false", d.name())
		}
		containers := list(spec["containers"])
		if len(containers) == 0 {
			t.Errorf("%s: no containers", d.name())
		}
		for _, c := range append(containers, list(spec["initContainers"])...) {
			c := dict(c)
			sc := dict(c["securityContext"])
			name := d.name() + "/" + str(c["name"])
			for k, want := range map[string]any{"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true, "runAsNonRoot": true} {
				if sc[k] != want {
					t.Errorf("%s: securityContext.%s = %v, want %v", name, k, sc[k], want)
				}
			}
			if sc["privileged"] == true {
				t.Errorf("%s: privileged", name)
			}
			if drop := list(sc.get("capabilities", "drop")); len(drop) != 1 || drop[0] != "ALL" {
				t.Errorf("%s: capabilities.drop = %v, want [ALL]", name, drop)
			}
			if add := sc.get("capabilities", "add"); add != nil {
				t.Errorf("%s: capabilities.add = %v", name, add)
			}
			if str(sc.get("seccompProfile", "type")) != "RuntimeDefault" {
				t.Errorf("%s: seccompProfile is not RuntimeDefault", name)
			}
			if dict(c["resources"]).get("limits", "memory") == nil {
				t.Errorf("%s: no memory limit", name)
			}
			for _, p := range list(c["ports"]) {
				if dict(p)["hostPort"] != nil {
					t.Errorf("%s: hostPort", name)
				}
			}
		}
	}
}

// checkRBAC: the control plane's rights are one Role in the sandbox
// namespace over the kinds it manages, with no wildcard and nothing
// cluster-wide.
func checkRBAC(t *testing.T, objs []object, sandboxNS string) {
	t.Helper()
	for _, kind := range []string{"ClusterRole", "ClusterRoleBinding"} {
		if got := find(objs, kind); len(got) > 0 {
			t.Errorf("%d %s rendered: the server needs nothing cluster-wide", len(got), kind)
		}
	}
	roles := find(objs, "Role")
	if len(roles) != 1 {
		t.Fatalf("%d Roles rendered, want 1", len(roles))
	}
	role := roles[0]
	if role.namespace() != sandboxNS {
		t.Errorf("Role %s in namespace %q, want the sandbox namespace %q", role.name(), role.namespace(), sandboxNS)
	}
	// What server/kube calls, and watch on pods; no list on Secrets.
	allowed := map[string][]string{
		"/pods":                             {"get", "list", "watch", "create", "patch", "delete"},
		"/secrets":                          {"get", "create", "patch", "delete"},
		"/persistentvolumeclaims":           {"create", "delete"},
		"networking.k8s.io/networkpolicies": {"get", "create", "patch", "delete"},
	}
	for _, rule := range list(role["rules"]) {
		rule := dict(rule)
		for _, g := range list(rule["apiGroups"]) {
			for _, res := range list(rule["resources"]) {
				verbs, ok := allowed[str(g)+"/"+str(res)]
				if !ok {
					t.Errorf("Role grants %s/%s, which the server does not manage", g, res)
					continue
				}
				for _, v := range list(rule["verbs"]) {
					if !slices.Contains(verbs, str(v)) {
						t.Errorf("Role grants %s on %s/%s", v, g, res)
					}
				}
			}
		}
		if rule["resourceNames"] != nil || rule["nonResourceURLs"] != nil {
			t.Errorf("unexpected rule %v", rule)
		}
	}
	bindings := find(objs, "RoleBinding")
	if len(bindings) != 1 || bindings[0].namespace() != sandboxNS {
		t.Fatalf("want one RoleBinding in %s, got %d", sandboxNS, len(bindings))
	}
	subjects := list(bindings[0]["subjects"])
	if len(subjects) != 1 || str(dict(subjects[0])["namespace"]) != releaseNS {
		t.Errorf("RoleBinding subjects = %v, want the server's account in %s", subjects, releaseNS)
	}
}

// checkSandboxNamespace: when the fences are on, the namespace denies all
// traffic but the control plane's and the admission policy binds to it
// alone.
func checkSandboxNamespace(t *testing.T, r *rendering, sandboxNS string) {
	t.Helper()
	policies := find(r.objs, "NetworkPolicy")
	if r.name == "minimal" {
		if len(policies) != 0 || len(find(r.objs, "ValidatingAdmissionPolicy")) != 0 {
			t.Error("fences rendered although the values turn them off")
		}
		return
	}
	var deny, allow object
	for _, p := range policies {
		if p.namespace() != sandboxNS {
			checkBastionPolicy(t, p)
			continue
		}
		switch {
		case p.get("spec", "ingress") == nil && p.get("spec", "egress") == nil:
			deny = p
		default:
			allow = p
		}
	}
	if deny == nil || len(dict(deny.get("spec", "podSelector"))) != 0 ||
		!slices.Equal(list(deny.get("spec", "policyTypes")), []any{"Ingress", "Egress"}) {
		t.Errorf("no default-deny policy for every pod, in and out: %v", deny)
	}
	if allow == nil || allow.get("spec", "egress") != nil {
		t.Fatalf("no ingress-only policy for the control plane: %v", allow)
	}
	from := list(allow.get("spec", "ingress"))
	if len(from) != 1 {
		t.Fatalf("control plane policy has %d ingress rules, want 1", len(from))
	}
	peers := list(dict(from[0])["from"])
	if len(peers) != 1 || dict(peers[0]).get("namespaceSelector", "matchLabels", "kubernetes.io/metadata.name") != releaseNS ||
		dict(peers[0]).get("podSelector", "matchLabels", "app.kubernetes.io/component") != "server" {
		t.Errorf("control plane policy admits %v, want only the server pods of %s", peers, releaseNS)
	}

	vaps := find(r.objs, "ValidatingAdmissionPolicy")
	bindings := find(r.objs, "ValidatingAdmissionPolicyBinding")
	if len(vaps) != 1 || len(bindings) != 1 {
		t.Fatalf("%d admission policies and %d bindings, want 1 and 1", len(vaps), len(bindings))
	}
	if vaps[0].get("spec", "failurePolicy") != "Fail" {
		t.Error("admission policy does not fail closed")
	}
	b := bindings[0]
	if b.get("spec", "policyName") != vaps[0].name() ||
		!slices.Equal(list(b.get("spec", "validationActions")), []any{"Deny"}) ||
		b.get("spec", "matchResources", "namespaceSelector", "matchLabels", "kubernetes.io/metadata.name") != sandboxNS {
		t.Errorf("admission binding does not deny in %s alone: %v", sandboxNS, b["spec"])
	}
	// Sandbox pods get a user namespace of their own (issue 17, finding
	// 2): the server asks for one and the policy refuses pods without.
	userNS := false
	for _, v := range list(vaps[0].get("spec", "validations")) {
		userNS = userNS || str(dict(v)["expression"]) == "has(object.spec.hostUsers) && object.spec.hostUsers == false"
	}
	if !userNS {
		t.Error("admission policy does not require hostUsers: false")
	}
	for _, cm := range find(r.objs, "ConfigMap") {
		if toml, ok := dict(cm["data"])["server.toml"]; ok && !strings.Contains(str(toml), "host-users = false") {
			t.Errorf("server settings do not ask for pods with user namespaces:\n%s", toml)
		}
	}
}

// checkBastionPolicy: the only policy outside the sandbox namespace lets
// the bastion reach the server's pods and DNS, nothing else.
func checkBastionPolicy(t *testing.T, p object) {
	t.Helper()
	if p.namespace() != releaseNS || p.get("spec", "podSelector", "matchLabels", "app.kubernetes.io/component") != "bastion" {
		t.Errorf("NetworkPolicy %s in %s is not the bastion's", p.name(), p.namespace())
		return
	}
	if !slices.Equal(list(p.get("spec", "policyTypes")), []any{"Egress"}) || p.get("spec", "ingress") != nil {
		t.Errorf("bastion policy %s is not egress-only", p.name())
	}
	egress := list(p.get("spec", "egress"))
	if len(egress) != 2 {
		t.Fatalf("bastion policy has %d egress rules, want 2 (server, DNS)", len(egress))
	}
	server := dict(list(dict(egress[0])["to"])[0])
	if server.get("podSelector", "matchLabels", "app.kubernetes.io/component") != "server" || server["namespaceSelector"] != nil {
		t.Errorf("bastion egress goes to %v, want the server pods of its namespace", server)
	}
	for _, port := range list(dict(egress[1])["ports"]) {
		if dict(port)["port"] != 53 {
			t.Errorf("bastion's second egress rule opens port %v, want DNS only", dict(port)["port"])
		}
	}
}

// checkNoSecretsInPlainText: credentials reach pods only through Secrets,
// never as literal environment values or arguments, and a Secret only as
// read-only files readable by the pod's group (0440), never as an
// environment variable: /proc/<pid>/environ shows those for as long as the
// process runs (issue 17, finding 5).
func checkNoSecretsInPlainText(t *testing.T, r *rendering) {
	t.Helper()
	for _, d := range find(r.objs, "Deployment") {
		spec := dict(d.get("spec", "template", "spec"))
		secretVolumes := map[string]bool{}
		for _, v := range list(spec["volumes"]) {
			v := dict(v)
			if v["secret"] == nil {
				continue
			}
			secretVolumes[str(v["name"])] = true
			if mode := v.get("secret", "defaultMode"); mode != 0o440 {
				t.Errorf("%s: secret volume %s has defaultMode %v, want 0440 (0o440 = %d)", d.name(), v["name"], mode, 0o440)
			}
		}
		if len(secretVolumes) > 0 && spec.get("securityContext", "fsGroup") == nil {
			t.Errorf("%s: secret volumes without an fsGroup are root's alone", d.name())
		}
		for _, c := range list(spec["containers"]) {
			c := dict(c)
			for _, m := range list(c["volumeMounts"]) {
				m := dict(m)
				if secretVolumes[str(m["name"])] && m["readOnly"] != true {
					t.Errorf("%s: secret volume %s mounted writable", d.name(), m["name"])
				}
			}
			for _, e := range list(c["env"]) {
				e := dict(e)
				if e.get("valueFrom", "secretKeyRef") != nil {
					t.Errorf("%s: env %s comes from a Secret; mount it as a file", d.name(), e["name"])
				}
				v := str(e["value"])
				if strings.Contains(v, "postgres://") || strings.Contains(v, "bxk_live_") ||
					(strings.HasPrefix(str(e["name"]), "BOXKITE_") && strings.HasSuffix(str(e["name"]), "_KEY") && e["value"] != nil && !strings.HasSuffix(str(e["name"]), "HOST_KEY")) ||
					str(e["name"]) == "BOXKITE_JWT_SECRET" && e["value"] != nil {
					t.Errorf("%s: env %s carries a credential in plain text", d.name(), e["name"])
				}
			}
			for _, a := range list(c["args"]) {
				if strings.Contains(str(a), "postgres://") || strings.Contains(str(a), "bxk_live_") {
					t.Errorf("%s: argument %q carries a credential", d.name(), a)
				}
			}
		}
	}
	for _, cm := range find(r.objs, "ConfigMap") {
		for k, v := range dict(cm["data"]) {
			if strings.Contains(str(v), "postgres://") || strings.Contains(str(v), "bxk_live_") {
				t.Errorf("ConfigMap %s key %s carries a credential", cm.name(), k)
			}
		}
	}
}

// TestChartMatchesDriver ties what the chart hard-codes to the kube
// driver's defaults, which the server has no settings for.
func TestChartMatchesDriver(t *testing.T) {
	r := allRenderings(t)[0] // the defaults
	if r.sandbox != kube.DefaultNamespace {
		t.Errorf("default sandbox namespace %q, the driver's is %q", r.sandbox, kube.DefaultNamespace)
	}
	var port any
	for _, p := range find(r.objs, "NetworkPolicy") {
		for _, rule := range list(p.get("spec", "ingress")) {
			port = dict(list(dict(rule)["ports"])[0])["port"]
		}
	}
	if port != int(kube.DefaultSidecarPort) {
		t.Errorf("the control plane may reach sidecars on port %v, the driver's is %d", port, kube.DefaultSidecarPort)
	}
	// The driver's per-sandbox policies admit pods named boxkite-server
	// (kube.Config.ControlPlaneLabels' default).
	for _, d := range find(r.objs, "Deployment") {
		labels := dict(d.get("spec", "template", "metadata", "labels"))
		if labels["app.kubernetes.io/component"] == "server" && labels["app.kubernetes.io/name"] != "boxkite-server" {
			t.Errorf("server pods are named %v, the driver admits boxkite-server", labels["app.kubernetes.io/name"])
		}
	}
}

// TestChartSandboxPull checks that sandbox pods pull their image as the
// server's pods do: with the same pull policy and Secrets of the same
// names (the server's settings image-pull-policy, image-pull-secrets).
func TestChartSandboxPull(t *testing.T) {
	for _, r := range allRenderings(t) {
		t.Run(r.name, func(t *testing.T) {
			var settings map[string]any
			for _, cm := range find(r.objs, "ConfigMap") {
				if data, ok := dict(cm["data"])["server.toml"]; ok {
					if err := toml.Unmarshal([]byte(str(data)), &settings); err != nil {
						t.Fatal(err)
					}
				}
			}
			for _, d := range find(r.objs, "Deployment") {
				if d.get("spec", "template", "metadata", "labels", "app.kubernetes.io/component") != "server" {
					continue
				}
				spec := dict(d.get("spec", "template", "spec"))
				var names []string
				for _, s := range list(spec["imagePullSecrets"]) {
					names = append(names, str(dict(s)["name"]))
				}
				if got, want := settings["image-pull-secrets"], strings.Join(names, ","); (got == nil && want != "") || (got != nil && got != want) {
					t.Errorf("sandbox pods pull with Secrets %v, the server's pods with %q", got, want)
				}
				policy := dict(list(spec["containers"])[0])["imagePullPolicy"]
				if settings["image-pull-policy"] != policy {
					t.Errorf("sandbox pods pull %v, the server's pods %v", settings["image-pull-policy"], policy)
				}
			}
		})
	}
}

// TestChartControlPlaneLabels: the server is told its own pods' labels
// (control-plane-labels), which the kube driver's per-sandbox policies
// admit on the sidecar port and let sandboxes granted egress reach; with
// a nameOverride too, where they are not the driver's default.
func TestChartControlPlaneLabels(t *testing.T) {
	data, err := render(t, "--set", "nameOverride=agents")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := parse(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range append(allRenderings(t), &rendering{name: "nameOverride", objs: objs}) {
		t.Run(r.name, func(t *testing.T) {
			var setting string
			for _, cm := range find(r.objs, "ConfigMap") {
				if data, ok := dict(cm["data"])["server.toml"]; ok {
					var settings map[string]any
					if err := toml.Unmarshal([]byte(str(data)), &settings); err != nil {
						t.Fatal(err)
					}
					setting = str(settings["control-plane-labels"])
				}
			}
			want, err := labels.ConvertSelectorToLabelsMap(setting)
			if err != nil || len(want) == 0 {
				t.Fatalf("control-plane-labels %q: %v", setting, err)
			}
			for _, d := range find(r.objs, "Deployment") {
				got := dict(d.get("spec", "template", "metadata", "labels"))
				if got["app.kubernetes.io/component"] != "server" {
					continue
				}
				for k, v := range want {
					if got[k] != v {
						t.Errorf("control-plane-labels %q: the server pods have %s=%v", setting, k, got[k])
					}
				}
			}
		})
	}
}

// TestChartStrictDecode decodes every rendered object into its Kubernetes
// type, strictly: a misspelt or misplaced field fails here, without a
// cluster (the API server checks the same in TestChartApplies).
func TestChartStrictDecode(t *testing.T) {
	decoder := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
	for _, r := range allRenderings(t) {
		t.Run(r.name, func(t *testing.T) {
			for _, o := range r.objs {
				data, err := json.Marshal(map[string]any(o))
				if err != nil {
					t.Fatal(err)
				}
				if _, _, err := decoder.Decode(data, nil, nil); err != nil {
					t.Errorf("%s %s: %v", o.kind(), o.name(), err)
				}
			}
		})
	}
}
