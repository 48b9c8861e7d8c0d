// Package deploy holds no code: its tests check the deployment files next
// to it (kubernetes/, systemd/, prometheus/, grafana/, ../compose.yaml) and
// the container image built from ../Dockerfile. It is its own module so
// that k8s.io/api, which only these tests need, stays out of seqsvr's
// go.mod.
package deploy
