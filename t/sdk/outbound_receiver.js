// A receiver of the edge's signed outbound webhooks for the tests only
// (never part of the product): it checks each delivery with the official
// Standard Webhooks library (standardwebhooks, installed by "make test"
// into build/test-sdks) under each secret given, and logs what it saw.
//
//   NODE_PATH=build/test-sdks/node_modules node t/sdk/outbound_receiver.js \
//       --port P --log FILE --secret whsec_A [--secret whsec_B ...] \
//       [--status N] [--ready FILE]
//
// Listens on 127.0.0.1:P (P 0: a free port; the --ready file says which).
// Once listening, writes the port number to the --ready file (FILE.tmp,
// then renamed, so the file is whole when it appears).
// For each request: the raw body (over 1 MiB: 413), then, for each
// --secret in order, new Webhook(secret).verify(body, headers) and whether
// it passed (and the error's message when not).  One JSON line a request
// is appended to --log before the answer is sent, so a line on disk means
// the request arrived:
//   {method, path, webhook_id, webhook_timestamp, webhook_signature,
//    content_type, verified: [bool a secret], errors: [string|null a
//    secret], status, body, received_ms}
// The answer, with an empty body: --status N when given (e.g. 500 to play
// a failing endpoint), else 204 when some secret verified, 401 when none.
// SIGTERM or SIGINT: closes and exits 0.
'use strict';

const fs = require('fs');
const http = require('http');
const { Webhook } = require('standardwebhooks');

const MAX_BODY = 1024 * 1024;

function usage(msg) {
    process.stderr.write('outbound_receiver.js: ' + msg + '\n'
        + 'usage: node outbound_receiver.js --port P --log FILE'
        + ' --secret S [--secret S ...] [--status N] [--ready FILE]\n');
    process.exit(2);
}

const opt = { secrets: [] };
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
    const name = argv[i];
    if (!['--port', '--log', '--secret', '--status', '--ready']
            .includes(name)) {
        usage('unknown argument ' + JSON.stringify(name));
    }
    if (i + 1 >= argv.length) usage(name + ' needs a value');
    const v = argv[++i];
    if (name === '--secret') opt.secrets.push(v);
    else opt[name.slice(2)] = v;
}
if (opt.port === undefined || !/^\d+$/.test(opt.port) || +opt.port > 65535) {
    usage('--port must be a number 0..65535');
}
if (!opt.log) usage('--log is required');
if (opt.secrets.length === 0) usage('at least one --secret is required');
let fixedStatus = null;
if (opt.status !== undefined) {
    if (!/^\d+$/.test(opt.status) || +opt.status < 200 || +opt.status > 599) {
        usage('--status must be a number 200..599');
    }
    fixedStatus = +opt.status;
}

function header(req, name) {
    const v = req.headers[name];
    return v === undefined ? null : v;
}

function handle(req, res, raw, tooBig) {
    const verified = [];
    const errors = [];
    for (const secret of opt.secrets) {
        if (tooBig) {
            verified.push(false);
            errors.push('body over 1 MiB');
            continue;
        }
        try {
            // The raw bytes as they came (a string would re-encode bytes
            // that are not UTF-8); jsonParse false: "verified" is about
            // the signature and timestamp, not whether the body is JSON.
            new Webhook(secret).verify(raw, req.headers, { jsonParse: false });
            verified.push(true);
            errors.push(null);
        } catch (e) {
            verified.push(false);
            errors.push(String(e && e.message !== undefined ? e.message : e));
        }
    }
    const status = tooBig ? 413
        : fixedStatus !== null ? fixedStatus
        : verified.includes(true) ? 204 : 401;
    fs.appendFileSync(opt.log, JSON.stringify({
        method: req.method,
        path: req.url,
        webhook_id: header(req, 'webhook-id'),
        webhook_timestamp: header(req, 'webhook-timestamp'),
        webhook_signature: header(req, 'webhook-signature'),
        content_type: header(req, 'content-type'),
        verified,
        errors,
        status,
        body: tooBig ? null : raw.toString('utf8'),
        received_ms: Date.now(),
    }) + '\n');
    res.writeHead(status, status === 204 ? {} : { 'Content-Length': '0' });
    res.end();
}

const server = http.createServer((req, res) => {
    const chunks = [];
    let size = 0;
    let tooBig = false;
    req.on('data', (c) => {
        size += c.length;
        if (size > MAX_BODY) {
            tooBig = true;
            chunks.length = 0;
        } else {
            chunks.push(c);
        }
    });
    req.on('end', () => handle(req, res, Buffer.concat(chunks), tooBig));
    req.on('error', () => res.destroy());
});

server.on('error', (e) => {
    process.stderr.write('outbound_receiver.js: ' + e.message + '\n');
    process.exit(1);
});

server.listen(+opt.port, '127.0.0.1', () => {
    const port = server.address().port;
    if (opt.ready) {
        fs.writeFileSync(opt.ready + '.tmp', port + '\n');
        fs.renameSync(opt.ready + '.tmp', opt.ready);
    }
});

function stop() {
    server.close();
    server.closeAllConnections();
    process.exit(0);
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
