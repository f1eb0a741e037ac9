package api

import _ "embed"

// openapiJSON is the OpenAPI 3.1 description of REST v1; TestOpenAPIMatchesRoutes
// keeps it in step with Routes.
//
//go:embed openapi.json
var openapiJSON []byte
