// Signs a body as the official Standard Webhooks library does
// (standardwebhooks, installed by "make test" into build/test-sdks), for
// the tests only: the line printed is what the edge's own signature of the
// same delivery must equal ("v1," and base64 of the HMAC-SHA256 of
// "MSG_ID.UNIX_SECONDS.BODY" under the secret's base64-decoded key).
//
//   NODE_PATH=build/test-sdks/node_modules \
//       node t/sdk/outbound_sign.js SECRET MSG_ID UNIX_SECONDS BODY_FILE
//
// SECRET as the library takes it: "whsec_" (optional) and base64.
// BODY_FILE's bytes are signed as they are.
'use strict';

const fs = require('fs');
const { Webhook } = require('standardwebhooks');

const [secret, msgId, seconds, bodyFile] = process.argv.slice(2);
if (bodyFile === undefined || !/^\d+$/.test(seconds)) {
    process.stderr.write('usage: node outbound_sign.js SECRET MSG_ID'
        + ' UNIX_SECONDS BODY_FILE\n');
    process.exit(2);
}
const body = fs.readFileSync(bodyFile);
process.stdout.write(
    new Webhook(secret).sign(msgId, new Date(+seconds * 1000), body) + '\n');
