// SPDX-License-Identifier: Apache-2.0

//go:build tools

// The plugin's own module has no go.mod, and it needs twinj/uuid as it was in 2015 (before
// UUID became an array): go.mod pins that version, which its vendored tree carried.
package tools

import _ "github.com/aws/session-manager-plugin/src/sessionmanagerplugin-main"
