package serve

import (
	"net/http"

	connectcors "connectrpc.com/cors"
	"github.com/rs/cors"
)

// withCORS lets browser clients (connect-web, grpc-web) call from any
// origin. There are no cookies or credentials, so any origin is safe.
func withCORS(h http.Handler) http.Handler {
	return cors.New(cors.Options{
		AllowOriginFunc: func(string) bool { return true },
		AllowedMethods:  connectcors.AllowedMethods(),
		AllowedHeaders:  connectcors.AllowedHeaders(),
		ExposedHeaders:  connectcors.ExposedHeaders(),
		MaxAge:          7200,
	}).Handler(h)
}
