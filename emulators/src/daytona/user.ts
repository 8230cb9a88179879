/** The sandbox user of Daytona's default snapshot, whose home is every relative path's base. */
export const SANDBOX_USER = { name: "daytona", home: "/home/daytona" } as const;
