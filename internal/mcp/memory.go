package mcp

import sdk "github.com/modelcontextprotocol/go-sdk/mcp"

func (s *server) addMemoryTools(srv *sdk.Server) {}

func (s *server) addGraphTools(srv *sdk.Server) {}
