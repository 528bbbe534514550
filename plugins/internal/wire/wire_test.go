package wire

import (
	"testing"

	"github.com/agenthost/agenthost/bindings"
	pb "github.com/agenthost/agenthost/plugins/proto"
)

func TestSensitivityFromProtoFailsClosed(t *testing.T) {
	tests := []struct {
		in   pb.Sensitivity
		want bindings.Sensitivity
	}{
		{pb.Sensitivity_SENSITIVITY_PUBLIC, bindings.Public},
		{pb.Sensitivity_SENSITIVITY_INTERNAL, bindings.Internal},
		{pb.Sensitivity_SENSITIVITY_SECRET, bindings.Secret},
		{pb.Sensitivity_SENSITIVITY_UNSPECIFIED, bindings.Secret},
		{pb.Sensitivity(99), bindings.Secret}, // a newer plugin's unknown value
	}
	for _, tt := range tests {
		if got := SensitivityFromProto(tt.in); got != tt.want {
			t.Errorf("SensitivityFromProto(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestGRPCPluginRequiresImpl(t *testing.T) {
	if err := (&GRPCPlugin{}).GRPCServer(nil, nil); err == nil {
		t.Error("registering a nil implementation succeeded")
	}
}
