package serve

import (
	"net/http"

	connectcors "connectrpc.com/cors"
	"github.com/rs/cors"
)

// withCORS lets browser clients (connect-web, grpc-web) call from any
// origin, sending Authorization. There are no cookies: a bearer token is
// sent only by a page that holds it, so any origin is safe.
func withCORS(h http.Handler) http.Handler {
	return cors.New(cors.Options{
		AllowOriginFunc: func(string) bool { return true },
		AllowedMethods:  connectcors.AllowedMethods(),
		AllowedHeaders:  append(connectcors.AllowedHeaders(), "Authorization"),
		ExposedHeaders:  connectcors.ExposedHeaders(),
		MaxAge:          7200,
	}).Handler(h)
}
