// Command etcd is upstream's etcd server at the version Kubernetes pins, the
// storage behind the test API server.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
