package serve

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/seqsvr/seqsvr/internal/tlsconf"
)

// CertExpiryMetric is the gauge of each certificate's end of validity.
const CertExpiryMetric = "seqsvr_tls_cert_expiry_timestamp_seconds"

// RegisterCertExpiry exports the NotAfter of the certificate in force of
// keys (re-read when its files change, so a renewal shows at once) as
// CertExpiryMetric{use=use}: "serving" (--tls-cert), "raft"
// (--raft-tls-cert), "client" (the allocsvr's --store-cert). A nil
// registry or pair registers nothing.
func RegisterCertExpiry(reg *prometheus.Registry, use string, keys *tlsconf.KeyPair) error {
	if reg == nil || keys == nil {
		return nil
	}
	return reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name:        CertExpiryMetric,
		Help:        "Unix time at which the certificate in force stops being valid (its NotAfter), by use: serving, raft, client.",
		ConstLabels: prometheus.Labels{"use": use},
	}, func() float64 {
		c := keys.Current()
		if c == nil || c.Leaf == nil {
			return 0
		}
		return float64(c.Leaf.NotAfter.Unix())
	}))
}
