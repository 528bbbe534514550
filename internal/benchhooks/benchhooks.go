// Package benchhooks owns the hooks through which the benchmarks
// (internal/bench) reach what package host keeps unexported; host sets
// them when it is initialised. Nothing outside the module can import it,
// so host's API stays what its users need.
package benchhooks

import "encoding/json"

// LoadListing builds the catalog of a *host.Host's server from tools/list
// results received elsewhere (host's loadListing).
var LoadListing func(h any, server string, secureParams bool, pages ...json.RawMessage) error
