// Command leafsvr serves package leaf's Leaf-segment allocator over HTTP
// with Leaf's API, for the peer benchmark:
//
//	leafsvr -addr 127.0.0.1:8090 -dsn 'root@tcp(127.0.0.1:3306)/leaf'
//	GET /api/segment/get/{tag} -> one ID, plain decimal, 200; 500 with a message on error
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/seqsvr/seqsvr/bench/peers/leaf"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8090", "listen address")
	dsn := flag.String("dsn", "", "MySQL/MariaDB DSN of the database holding leaf_alloc")
	pool := flag.Int("pool", 8, "database connections (loads are one per tag at a time)")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if *dsn == "" {
		log.Error("leafsvr: -dsn is required")
		os.Exit(2)
	}
	db, err := sql.Open("mysql", *dsn)
	if err != nil {
		log.Error("leafsvr: open", "err", err)
		os.Exit(2)
	}
	db.SetMaxOpenConns(*pool)
	db.SetMaxIdleConns(*pool)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	err = db.PingContext(ctx)
	cancel()
	if err != nil {
		log.Error("leafsvr: database", "err", err)
		os.Exit(2)
	}
	gen := leaf.New(leaf.SQL{DB: db})
	gen.Errors = func(tag string, err error) { log.Warn("leafsvr: segment load failed", "tag", tag, "err", err) }
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/segment/get/{tag}", func(w http.ResponseWriter, r *http.Request) {
		id, err := gen.Next(r.Context(), r.PathValue("tag"))
		if err != nil {
			code := http.StatusInternalServerError
			if errors.Is(err, leaf.ErrUnknownTag) {
				code = http.StatusNotFound
			}
			http.Error(w, err.Error(), code)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write(strconv.AppendInt(nil, id, 10))
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	log.Info("leafsvr: serving", "addr", *addr)
	log.Error("leafsvr", "err", (&http.Server{Addr: *addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}).ListenAndServe())
	os.Exit(1)
}
