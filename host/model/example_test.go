package model_test

import (
	"context"
	"fmt"

	"github.com/agenthost/agenthost/host/model"
)

// A model that answers at once (a scripted model, or a client for an API
// that does not stream) is a model.Func; the agent loop ranges over its
// answer like any other model's.
func ExampleFunc() {
	echo := model.Func(func(_ context.Context, req *model.Request) (model.Message, model.Usage, error) {
		last := req.Messages[len(req.Messages)-1]
		return model.Message{Content: "you said: " + last.Content}, model.Usage{TotalTokens: 3}, nil
	})
	req := &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hello"}}}
	for resp, err := range echo.Generate(context.Background(), req) {
		if err != nil {
			panic(err)
		}
		fmt.Println(resp.Message.Role, resp.Partial, resp.Message.Content)
	}
	// Output: assistant false you said: hello
}
