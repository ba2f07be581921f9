// A stand-in for github.com/elastic/go-elasticsearch/v9 in the Jaeger build
// of tools/jaeger (see the replace directive there): only the names Jaeger's
// Elasticsearch 8+ storage refers to, without the typed API that is a third
// of Jaeger's build.
module github.com/elastic/go-elasticsearch/v9

go 1.26.8
