// The types shared by workflows, activities and the client, by concern. Import from here.
export * from './tool';
export * from './ledger';
export * from './decisions';
export * from './session';
export * from './activities';
