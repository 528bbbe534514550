# Make targets owned by plugins/. Include from the top-level Makefile with:
#   include plugins/proto.mk
#
# `make proto` regenerates the committed gRPC code in plugins/proto from
# credential.proto. It needs Debian's protobuf-compiler and libprotobuf-dev
# (protoc and the well-known .proto files); the Go generators are the
# versions pinned as `tool` dependencies in go.mod (protoc-gen-go matches
# google.golang.org/protobuf; protoc-gen-go-grpc v1.3.0 is the newest whose
# output builds against google.golang.org/grpc v1.61).

PROTO_DIR     ?= plugins/proto
PROTO_INCLUDE ?= /usr/include

.PHONY: proto
proto:
	@command -v protoc >/dev/null || { echo "protoc not found: apt-get install -y protobuf-compiler libprotobuf-dev" >&2; exit 1; }
	@test -f $(PROTO_INCLUDE)/google/protobuf/timestamp.proto || { echo "well-known protos not found under $(PROTO_INCLUDE): apt-get install -y libprotobuf-dev" >&2; exit 1; }
	@set -e; tools=$$(mktemp -d); trap 'rm -rf "$$tools"' EXIT; \
	go build -o "$$tools/protoc-gen-go" google.golang.org/protobuf/cmd/protoc-gen-go; \
	go build -o "$$tools/protoc-gen-go-grpc" google.golang.org/grpc/cmd/protoc-gen-go-grpc; \
	protoc -I $(PROTO_DIR) -I $(PROTO_INCLUDE) \
		--plugin=protoc-gen-go="$$tools/protoc-gen-go" \
		--plugin=protoc-gen-go-grpc="$$tools/protoc-gen-go-grpc" \
		--go_out=$(PROTO_DIR) --go_opt=paths=source_relative \
		--go-grpc_out=$(PROTO_DIR) --go-grpc_opt=paths=source_relative \
		$(PROTO_DIR)/credential.proto; \
	echo "regenerated $(PROTO_DIR)/credential.pb.go and credential_grpc.pb.go"
