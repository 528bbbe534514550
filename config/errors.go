package config

import "github.com/agenthost/agenthost/config/internal/problem"

// ErrConfig matches every error this package returns for a bad or
// unreadable configuration: errors.Is(err, ErrConfig).
var ErrConfig = problem.ErrConfig

// Error is one configuration problem: File is the configuration file (""
// when there is none), Key the setting's path ("mcpServers.orders.args[2]";
// "" for the file as a whole), Msg what is wrong and Err the underlying
// cause when there is one. It renders "file: key: msg" and matches
// ErrConfig. Its message never contains a configured value, only file,
// key and variable names.
type Error = problem.Error
