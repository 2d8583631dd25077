// Adyen notification batches judged by Adyen's official Node library
// (@adyen/api-library's HmacValidator, installed by "make test" into
// build/test-sdks), written as cases for build/t/adyen_test: the edge's
// reader and verifier must give each item the library's verdict, and the
// library's signed string.
//
//   node adyen_cases.js COUNT SEED [KEY] > cases.json
//
// With KEY (hex), every batch is signed with it (an item "with another
// key" still with a random one): cases to send to an edge holding KEY.
//
// Items are random but repeatable (SEED): references and accounts with
// ':', '\', spaces and non-ASCII letters, an originalReference absent or
// empty, amounts up to 15 digits, fields written with \u escapes, items
// signed with the key, with another key, changed after signing in a
// signed field or in an unsigned one.
'use strict';

const { hmacValidator: HmacValidator } = require('@adyen/api-library');

const count = parseInt(process.argv[2] || '1000', 10);
let seed = parseInt(process.argv[3] || '1', 10) >>> 0;
const fixedKey = process.argv[4];

// mulberry32: small, and the same sequence on every machine
function random() {
    seed = (seed + 0x6d2b79f5) >>> 0;
    let t = seed;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}

function pick(list) { return list[Math.floor(random() * list.length)]; }

function chars(alphabet, n) {
    let s = '';
    for (let i = 0; i < n; i++) s += alphabet[Math.floor(random() * alphabet.length)];
    return s;
}

const UPPER = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
const HEX = '0123456789ABCDEF';

function key() { return chars(HEX, 64); }

// JSON text of a string, some characters written as \u escapes
function quote(s) {
    let out = '"';
    for (const ch of s) {
        const code = ch.codePointAt(0);
        if (ch === '"' || ch === '\\') out += '\\' + ch;
        else if (code < 0x20 || random() < 0.05) {
            if (code > 0xffff) {
                const hi = 0xd800 + ((code - 0x10000) >> 10);
                const lo = 0xdc00 + ((code - 0x10000) & 0x3ff);
                out += '\\u' + hi.toString(16) + '\\u' + lo.toString(16).toUpperCase();
            } else {
                out += '\\u' + code.toString(16).padStart(4, '0');
            }
        } else out += ch;
    }
    return out + '"';
}

function text(v) {
    if (typeof v === 'string') return quote(v);
    if (typeof v === 'number') return String(v);
    if (Array.isArray(v)) return '[' + v.map(text).join(',') + ']';
    const keys = Object.keys(v);
    // members in a random order, with random space between them
    keys.sort(() => random() - 0.5);
    const sp = () => pick(['', ' ', '\n  ']);
    return '{' + keys.map((k) => sp() + quote(k) + ':' + sp() + text(v[k])).join(',') + sp() + '}';
}

function item() {
    const code = pick(['AUTHORISATION', 'CAPTURE', 'CAPTURE_FAILED', 'REFUND',
                       'REFUND_FAILED', 'CANCEL_OR_REFUND', 'CHARGEBACK',
                       'CHARGEBACK_REVERSED', 'CANCELLATION']);
    const it = {
        additionalData: { cardHolderName: pick(['Jane Doe', 'Zoë Ålund', 'Ｊａｎｅ', '李雷']),
                          paymentMethodVariant: 'visa' },
        amount: { currency: pick(['EUR', 'USD', 'JPY', 'KWD']),
                  value: Math.floor(random() * Math.pow(10, 1 + Math.floor(random() * 15))) },
        eventCode: code,
        eventDate: '2026-12-06T10:00:00+01:00',
        merchantAccountCode: pick(['TestMerchant', 'Merchant 1', 'Broker_EU', 'Händler-Ö', 'Broker 😀',
                                   'Broker:EU', 'Back\\slash', 'a:\\:b']),
        merchantReference: pick(['dep_', 'dep_', 'ref:', 'ref\\', '']) + chars('0123456789', 6 + Math.floor(random() * 3)),
        paymentMethod: 'visa',
        pspReference: chars(UPPER, 16),
        success: pick(['true', 'false'])
    };
    if (code !== 'AUTHORISATION' || random() < 0.2) it.originalReference = chars(UPPER, 16);
    else if (random() < 0.3) it.originalReference = '';
    if (it.amount.value > Number.MAX_SAFE_INTEGER) it.amount.value = 1;
    return it;
}

const validator = new HmacValidator();
const cases = [];

for (let n = 0; n < count; n++) {
    const k = fixedKey || key();
    const items = [];
    const size = 1 + Math.floor(random() * 5);
    for (let i = 0; i < size; i++) {
        const it = item();
        const how = pick(['signed', 'signed', 'signed', 'other key', 'changed', 'unsigned changed']);
        it.additionalData.hmacSignature = validator.calculateHmac(it, how === 'other key' ? key() : k);
        if (how === 'changed') {
            const f = pick(['value', 'currency', 'merchantReference', 'eventCode', 'success', 'pspReference']);
            if (f === 'value') it.amount.value += 1;
            else if (f === 'currency') it.amount.currency = it.amount.currency === 'EUR' ? 'USD' : 'EUR';
            else if (f === 'success') it.success = it.success === 'true' ? 'false' : 'true';
            else it[f] = it[f] + 'X';
        } else if (how === 'unsigned changed') {
            it.additionalData.cardHolderName = 'Mallory';
        }
        items.push(it);
    }
    cases.push({
        name: `random batch ${n}`,
        key: fixedKey ? k : pick([k, k.toLowerCase()]),
        body: text({ live: 'false',
                     notificationItems: items.map((it) => ({ NotificationRequestItem: it })) }),
        expect: items.map((it) => validator.validateHMAC(it, k) ? 'valid' : 'bad_signature'),
        event_ids: items.map((it) => `${it.pspReference}:${it.eventCode}:${it.success}`),
        signed: items.map((it) => validator.getDataToSign(it))
    });
}

process.stdout.write(JSON.stringify({
    source: `generated by t/sdk/adyen_cases.js ${count} ${process.argv[3] || '1'}, judged by @adyen/api-library`,
    cases
}) + '\n');
