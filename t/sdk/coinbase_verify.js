// Coinbase Commerce's official Node library (coinbase-commerce-node,
// installed by "make test" into build/test-sdks) reading what the tests
// sent the edge.  One JSON object a line on stdin: {body, signature,
// secret}; one a line on stdout: {ok: true, id, type} with the event the
// library returns, or {ok: false, error}.
'use strict';

const readline = require('readline');
const { Webhook } = require('coinbase-commerce-node');

const rl = readline.createInterface({ input: process.stdin });

rl.on('line', (line) => {
    const d = JSON.parse(line);
    let out;
    try {
        const event = Webhook.verifyEventBody(d.body, d.signature, d.secret);
        out = { ok: true, id: event.id, type: event.type };
    } catch (e) {
        out = { ok: false, error: e.constructor.name };
    }
    process.stdout.write(JSON.stringify(out) + '\n');
});
