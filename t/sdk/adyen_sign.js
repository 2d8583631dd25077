// Signs every item of an Adyen notification batch (stdin) with KEY, as
// Adyen's official Node library computes it (@adyen/api-library's
// HmacValidator, installed by "make test" into build/test-sdks), and
// writes the batch back (stdout): how t/26 sends the library's own sample
// notifications to the edge under the edge's key.
//
//   node adyen_sign.js KEY < batch.json > signed.json
'use strict';

const { hmacValidator: HmacValidator } = require('@adyen/api-library');

const key = process.argv[2];
const chunks = [];

process.stdin.on('data', (c) => chunks.push(c));
process.stdin.on('end', () => {
    const batch = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    const validator = new HmacValidator();
    for (const w of batch.notificationItems) {
        const item = w.NotificationRequestItem;
        item.additionalData = item.additionalData || {};
        delete item.additionalData.hmacSignature;
        item.additionalData.hmacSignature = validator.calculateHmac(item, key);
    }
    process.stdout.write(JSON.stringify(batch));
});
