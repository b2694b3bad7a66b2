// The floor under `init`'s start-up (npm run bench -- startup): the least any Node program must do on the
// wire for a fresh pod start, with Node alone and no library: an IMDSv2 token, one metadata read, and one
// EC2 Query call signed with SigV4 (DescribeNetworkInterfaces, which changes nothing). What `node` costs
// for this over `node -e 0` is not ours to win back; the gap between it and `init` is.
"use strict";
const { createHash, createHmac } = require("node:crypto");
const http = require("node:http");

function request(url, options, body) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, options, (res) => {
      const chunks = [];
      res.on("data", (c) => chunks.push(c));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        if (res.statusCode !== 200) reject(new Error(`${options.method} ${url}: ${res.statusCode} ${text}`));
        else resolve(text);
      });
    });
    req.on("error", reject);
    req.end(body);
  });
}

const hmac = (key, text) => createHmac("sha256", key).update(text).digest();
const sha256 = (text) => createHash("sha256").update(text).digest("hex");

/** SigV4 over an EC2 Query POST (the form body is the payload). */
function signedHeaders(url, body, region, accessKeyId, secretAccessKey) {
  const amzDate = new Date()
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d{3}/, "");
  const day = amzDate.slice(0, 8);
  const host = new URL(url).host;
  const canonical = [
    "POST",
    "/",
    "",
    `content-type:application/x-www-form-urlencoded\nhost:${host}\nx-amz-date:${amzDate}\n`,
    "content-type;host;x-amz-date",
    sha256(body),
  ].join("\n");
  const scope = `${day}/${region}/ec2/aws4_request`;
  const toSign = ["AWS4-HMAC-SHA256", amzDate, scope, sha256(canonical)].join("\n");
  let key = hmac(`AWS4${secretAccessKey}`, day);
  for (const part of [region, "ec2", "aws4_request"]) key = hmac(key, part);
  const signature = createHmac("sha256", key).update(toSign).digest("hex");
  return {
    "content-type": "application/x-www-form-urlencoded",
    "x-amz-date": amzDate,
    authorization: `AWS4-HMAC-SHA256 Credential=${accessKeyId}/${scope}, SignedHeaders=content-type;host;x-amz-date, Signature=${signature}`,
  };
}

async function main() {
  const imds = process.env.AWS_EC2_METADATA_SERVICE_ENDPOINT;
  const ec2 = process.env.AWS_ENDPOINT_URL_EC2;
  if (imds === undefined || ec2 === undefined) {
    throw new Error("set AWS_EC2_METADATA_SERVICE_ENDPOINT and AWS_ENDPOINT_URL_EC2");
  }
  const token = await request(new URL("/latest/api/token", imds), {
    method: "PUT",
    headers: { "x-aws-ec2-metadata-token-ttl-seconds": "60" },
  });
  const macs = await request(new URL("/latest/meta-data/network/interfaces/macs/", imds), {
    method: "GET",
    headers: { "x-aws-ec2-metadata-token": token },
  });
  const mac = macs.split("\n")[0]?.replace(/\/$/, "") ?? "";
  const body = `Action=DescribeNetworkInterfaces&Version=2016-11-15&Filter.1.Name=mac-address&Filter.1.Value.1=${mac}`;
  const headers = signedHeaders(
    ec2,
    body,
    process.env.AWS_REGION ?? "us-east-1",
    process.env.AWS_ACCESS_KEY_ID ?? "",
    process.env.AWS_SECRET_ACCESS_KEY ?? "",
  );
  const answer = await request(new URL("/", ec2), { method: "POST", headers }, body);
  if (!answer.includes("<networkInterfaceSet>"))
    throw new Error(`unexpected answer: ${answer.slice(0, 200)}`);
}

main().catch((error) => {
  process.stderr.write(`startup-floor: ${error.message}\n`);
  process.exitCode = 1;
});
