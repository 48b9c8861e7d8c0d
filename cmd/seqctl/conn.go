package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"connectrpc.com/connect"

	"github.com/seqsvr/seqsvr/alloc/storeclient"
	"github.com/seqsvr/seqsvr/client"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/auth"
	"github.com/seqsvr/seqsvr/internal/tlsconf"
)

// tlsConfig is the TLS client configuration of the flags, nil for none.
func (a *app) tlsConfig() (*tls.Config, error) {
	if a.g.ca == "" && a.g.cert == "" {
		return nil, nil
	}
	var keys *tlsconf.KeyPair
	if a.g.cert != "" {
		var err error
		if keys, err = tlsconf.LoadKeyPair(a.g.cert, a.g.key, nil); err != nil {
			return nil, configError{err}
		}
	}
	cfg, err := tlsconf.Client(a.g.ca, keys)
	if err != nil {
		return nil, configError{err}
	}
	return cfg, nil
}

func (a *app) bearer() (string, error) {
	if a.g.tokenFile != "" {
		tok, err := auth.ReadTokenFile(a.g.tokenFile)
		if err != nil {
			return "", configError{err}
		}
		return tok, nil
	}
	return a.g.token, nil
}

// urls splits a comma-separated list; host:port gets https:// with a CA
// or certificate, else http://.
func (a *app) urls(list, flagName string) ([]string, error) {
	var out []string
	for _, u := range strings.Split(list, ",") {
		u = strings.TrimRight(strings.TrimSpace(u), "/")
		if u == "" {
			continue
		}
		if !strings.Contains(u, "://") {
			if a.g.ca != "" || a.g.cert != "" {
				u = "https://" + u
			} else {
				u = "http://" + u
			}
		}
		out = append(out, u)
	}
	if len(out) == 0 {
		return nil, configError{fmt.Errorf("no %s URL: set --%s or $SEQCTL_%s", flagName, flagName, strings.ToUpper(flagName))}
	}
	return out, nil
}

func (a *app) httpClient() (*http.Client, error) {
	cfg, err := a.tlsConfig()
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig, tr.ForceAttemptHTTP2 = cfg, true
	return &http.Client{Transport: tr}, nil
}

func (a *app) connectOptions() ([]connect.ClientOption, error) {
	tok, err := a.bearer()
	if err != nil {
		return nil, err
	}
	var opts []connect.ClientOption
	if tok != "" {
		opts = append(opts, connect.WithInterceptors(auth.Bearer(tok)))
	}
	if a.g.grpc {
		opts = append(opts, connect.WithGRPC())
	}
	return opts, nil
}

// store runs call against the --store members through the allocsvr's
// own store client (alloc/storeclient): it finds the leader, follows
// leader changes and retries as errs.Judge says for a store call, until
// the command's deadline. A write whose answer was lost may thus be sent
// twice: a create then answers already_exists, which is the tag or space
// the first attempt made. method names the call in errors.
func (a *app) store(ctx context.Context, method string, call func(ctx context.Context, s seqsvrv1connect.StoreServiceClient) error) error {
	urls, err := a.urls(a.g.store, "store")
	if err != nil {
		return err
	}
	hc, err := a.httpClient()
	if err != nil {
		return err
	}
	opts, err := a.connectOptions()
	if err != nil {
		return err
	}
	sc, err := storeclient.New(urls, storeclient.Options{
		HTTPClient:    hc,
		ClientOptions: opts,
		// One attempt may be a whole backup stream: it gets the
		// command's time, not a store call's.
		RequestTimeout: a.g.timeout,
		Logger:         slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return configError{err}
	}
	return sc.Call(ctx, method, call)
}

// member is the generated client of one store member, asked alone (no
// leader following, no retry): status reports each member's own answer.
func (a *app) member(url string) (seqsvrv1connect.StoreServiceClient, error) {
	hc, err := a.httpClient()
	if err != nil {
		return nil, err
	}
	opts, err := a.connectOptions()
	if err != nil {
		return nil, err
	}
	return seqsvrv1connect.NewStoreServiceClient(hc, url, opts...), nil
}

// alloc is a client of the --alloc allocsvrs.
func (a *app) alloc() (*client.Client, error) {
	urls, err := a.urls(a.g.alloc, "alloc")
	if err != nil {
		return nil, err
	}
	tok, err := a.bearer()
	if err != nil {
		return nil, err
	}
	cfg, err := a.tlsConfig()
	if err != nil {
		return nil, err
	}
	opts := []client.Option{client.WithTimeout(a.g.timeout)}
	if tok != "" {
		opts = append(opts, client.WithToken(tok))
	}
	if cfg != nil {
		opts = append(opts, client.WithTLSConfig(cfg))
	}
	if a.g.grpc {
		opts = append(opts, client.WithProtocol(client.ProtocolGRPC))
	}
	c, err := client.New(urls, opts...)
	if err != nil {
		return nil, configError{err}
	}
	return c, nil
}

// allocStubs are the generated AllocService clients of every --alloc URL
// (for Status, which asks each allocsvr).
func (a *app) allocStubs() ([]string, []seqsvrv1connect.AllocServiceClient, error) {
	urls, err := a.urls(a.g.alloc, "alloc")
	if err != nil {
		return nil, nil, err
	}
	hc, err := a.httpClient()
	if err != nil {
		return nil, nil, err
	}
	opts, err := a.connectOptions()
	if err != nil {
		return nil, nil, err
	}
	stubs := make([]seqsvrv1connect.AllocServiceClient, len(urls))
	for i, u := range urls {
		stubs[i] = seqsvrv1connect.NewAllocServiceClient(hc, u, opts...)
	}
	return urls, stubs, nil
}
