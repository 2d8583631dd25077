// make bench: the peer the edge is measured against.
//
// What a team would write instead of the nginx module, done well: Express 5,
// stripe-node's constructEvent() on the raw bytes, node-postgres with a
// prepared statement calling the same mt5credit.ingest() the edge calls,
// 200 only after it returned (the transaction committed).  As many
// processes as nginx has workers, each with as large a pool.
//
// Environment: PEER_PORT, PEER_PROCESSES, PEER_POOL, PEER_SECRET_FILE,
// PGHOST, PGPORT, PGUSER, PGDATABASE (node-postgres reads the last four).
// Run by t/bench/edge_bench.pl with NODE_PATH at the packages
// `make bench` installed (build/bench-peer/node_modules).

'use strict';

const cluster = require('node:cluster');
const fs = require('node:fs');

const port = Number(process.env.PEER_PORT);
const processes = Number(process.env.PEER_PROCESSES || 2);
const poolSize = Number(process.env.PEER_POOL || 8);

if (cluster.isPrimary) {
    for (let i = 0; i < processes; i++) {
        cluster.fork();
    }
    cluster.on('exit', (worker, code) => {
        console.error(`peer: process ${worker.process.pid} exited (${code})`);
        process.exit(1);
    });
    return;
}

const express = require('express');
const Stripe = require('stripe');
const { Pool } = require('pg');

// constructEvent() verifies locally; no API key is ever used
const stripe = new Stripe('sk_test_unused_by_constructEvent');
const secret = fs.readFileSync(process.env.PEER_SECRET_FILE, 'utf8').trim();
const pool = new Pool({ max: poolSize });

const ingest = {
    name: 'ingest',
    text: 'SELECT outcome, credit_id, event_row_id, detail '
        + 'FROM mt5credit.ingest($1, $2, $3, $4, $5, $6)',
};

const app = express();

app.post('/webhooks/stripe', express.raw({ type: '*/*', limit: '1mb' }),
    async (req, res) => {
        const header = req.get('stripe-signature') || '';
        try {
            // the tolerance the edge is configured with in the benchmark
            stripe.webhooks.constructEvent(req.body, header, secret, 3600);
        } catch (e) {
            return res.status(400).json({ error: 'bad_signature' });
        }
        const t = /(?:^|,)t=(\d+)/.exec(header);
        try {
            const r = await pool.query({
                ...ingest,
                values: ['stripe', null, req.body, 'stripe', t[1], null],
            });
            const row = r.rows[0];
            res.json({ outcome: row.outcome, event: row.event_row_id,
                       credit: row.credit_id });
        } catch (e) {
            res.status(503).json({ error: 'temporarily_unavailable' });
        }
    });

app.get('/plain', (req, res) => res.send('ok\n'));

app.listen(port, '127.0.0.1');
