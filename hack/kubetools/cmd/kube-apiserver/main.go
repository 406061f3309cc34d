// Command kube-apiserver is upstream's Kubernetes API server, built from the
// module proxy so the kube driver's tests can run against a real one.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
