import { z } from "zod";
import type { ServiceClients } from "../clients.ts";
import { isoTime } from "../json.ts";
import { defineOperation } from "../operation.ts";
import { userSchema } from "../schemas.ts";

export function userOperations({ identity }: ServiceClients) {
  return [
    defineOperation({
      id: "ListUsers",
      method: "GET",
      path: "/users",
      summary: "Users who belong to the caller's organization",
      response: { status: 200, description: "The users", schema: z.strictObject({ users: z.array(userSchema) }) },
      async handle({ call }) {
        const { users } = await identity.listUsers({}, call);
        return {
          users: users.map((u) => ({
            user_id: u.userId,
            email: u.email,
            ...(u.name !== undefined ? { name: u.name } : {}),
            organizations: u.organizations,
            created_at: isoTime(u.createdAt),
            updated_at: isoTime(u.updatedAt),
          })),
        };
      },
    }),
  ];
}
