import { randomBytes } from "node:crypto";
import {
  AbortMultipartUploadCommand,
  CreateBucketCommand,
  DeleteBucketCommand,
  DeleteObjectsCommand,
  ListMultipartUploadsCommand,
  paginateListObjectsV2,
  S3Client,
} from "@aws-sdk/client-s3";
import { testServers } from "./servers.ts";

const region = "us-east-1";

export interface FreshS3Bucket {
  bucket: string;
  /** The storage settings that put blobs in this bucket (createS3BlobStore takes them). */
  settings: {
    S3_BUCKET: string;
    S3_ENDPOINT: string;
    S3_REGION: string;
    S3_ACCESS_KEY_ID: string;
    S3_SECRET_ACCESS_KEY: string;
    S3_FORCE_PATH_STYLE: boolean;
  };
  /** The same as environment variables, for a process of ours. */
  env: Record<string, string>;
  /** A client with the root credentials, to look at the bucket behind the adapter's back. */
  client: S3Client;
  /** The keys of every object in the bucket (all pages). */
  objectKeys(): Promise<string[]>;
  /** Aborts unfinished multipart uploads, empties and removes the bucket. */
  cleanup(): Promise<void>;
}

/** A uniquely named bucket on the test S3 server (`needs("S3_TEST_ENDPOINT", …)` first). */
export async function freshS3Bucket(prefix = "loom-test"): Promise<FreshS3Bucket> {
  const server = testServers.s3;
  if (!server) throw new Error("S3_TEST_ENDPOINT, S3_TEST_ACCESS_KEY_ID and S3_TEST_SECRET_ACCESS_KEY are not set");
  const bucket = `${prefix}-${randomBytes(6).toString("hex")}`;
  const client = new S3Client({
    region,
    endpoint: server.endpoint,
    forcePathStyle: true,
    credentials: { accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey },
  });
  await client.send(new CreateBucketCommand({ Bucket: bucket }));
  const settings = {
    S3_BUCKET: bucket,
    S3_ENDPOINT: server.endpoint,
    S3_REGION: region,
    S3_ACCESS_KEY_ID: server.accessKeyId,
    S3_SECRET_ACCESS_KEY: server.secretAccessKey,
    S3_FORCE_PATH_STYLE: true,
  };
  const objectKeys = async () => {
    const keys: string[] = [];
    for await (const page of paginateListObjectsV2({ client }, { Bucket: bucket }))
      for (const object of page.Contents ?? []) if (object.Key) keys.push(object.Key);
    return keys;
  };
  return {
    bucket,
    settings,
    env: { ...settings, S3_FORCE_PATH_STYLE: "true" },
    client,
    objectKeys,
    async cleanup() {
      try {
        // Unfinished uploads (a test cut short) would keep the bucket from going; the SDK has no paginator for them.
        for (;;) {
          const { Uploads = [], IsTruncated } = await client.send(new ListMultipartUploadsCommand({ Bucket: bucket }));
          for (const upload of Uploads) {
            await client.send(
              new AbortMultipartUploadCommand({ Bucket: bucket, Key: upload.Key, UploadId: upload.UploadId }),
            );
          }
          if (!IsTruncated || !Uploads.length) break;
        }
        const keys = await objectKeys();
        // DeleteObjects takes at most 1,000 keys a request.
        for (let i = 0; i < keys.length; i += 1000) {
          const objects = keys.slice(i, i + 1000).map((Key) => ({ Key }));
          await client.send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: objects, Quiet: true } }));
        }
        await client.send(new DeleteBucketCommand({ Bucket: bucket }));
      } finally {
        client.destroy();
      }
    },
  };
}
